"""The bytes of a cell's stamped reads (stamp-dump.patch of ../dev-kernel-mu-scatter) per 5 % band of
the rate each read gives (its bytes over the time since the same stream's read before): share of the
bytes, reads, the commonest packets per read, the median gap. python3 read_profile.py DIR.
Development only; nothing here judges."""
import glob, math, array, collections, sys
d=sys.argv[1]
BAND=0.05
prof=collections.Counter(); sizes=collections.defaultdict(collections.Counter); gaps=collections.defaultdict(list)
for f in glob.glob(d+"/*.bin"):
    a=array.array("Q"); a.frombytes(open(f,"rb").read())
    prev=None
    for i in range(0,len(a),2):
        at,n=a[i],a[i+1]
        if prev is not None and at>prev and n:
            r=n*8e3/(at-prev)  # Mb/s
            b=round(math.log(r)/math.log(1+BAND))
            prof[b]+=n
            sizes[b][min(n//1448, 64)]+=1
            gaps[b].append(at-prev)
        prev=max(at,prev or 0)
tot=sum(prof.values())
for b in sorted(prof):
    r=(1+BAND)**b
    if r<50: continue
    sz=sizes[b].most_common(3)
    g=sorted(gaps[b]); gm=g[len(g)//2]
    print(f"{r:8.0f} Mb/s {100*prof[b]/tot:5.2f}% reads {sum(sizes[b].values()):7d} pkts/read(top) {sz} gap-median {gm/1e3:.1f} us")
