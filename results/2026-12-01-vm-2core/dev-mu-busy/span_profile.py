"""The bytes of a cell's stamped reads per 5 % band of the rate over spans of consecutive reads of one
stream at least S long (the bytes of the reads over the time from the read before the first to the
last), for S from 0 (each read alone) to 1 ms: where bunches after the bottleneck stop showing. python3
span_profile.py DIR. Development only; nothing here judges."""
import glob, math, array, collections, sys
d=sys.argv[1]; BAND=0.05
def prof(S):
    p=collections.Counter()
    for f in glob.glob(d+"/*.bin"):
        a=array.array("Q"); a.frombytes(open(f,"rb").read())
        t=[a[i] for i in range(0,len(a),2)]; n=[a[i+1] for i in range(0,len(a),2)]
        i=1
        while i<len(t):
            start=t[i-1]; b=0; j=i
            while j<len(t):
                b+=n[j]
                if t[j]-start>=S: break
                j+=1
            if j>=len(t): break
            span=t[j]-start
            if span>0 and b:
                r=b*8e3/span
                p[round(math.log(r)/math.log(1+BAND))]+=b
            i=j+1
    return p
for S in [0, 50e3, 100e3, 250e3, 500e3, 1000e3]:
    p=prof(S); tot=sum(p.values())
    top=max(p.values())
    bands=sorted(p)
    line=[f"{(1+BAND)**b:.0f}:{100*p[b]/tot:.1f}" for b in bands if (1+BAND)**b>600 and 100*p[b]/tot>=0.5]
    strongest=max(bands,key=lambda b:p[b])
    print(f"span>={S/1e3:.0f}us strongest {(1+BAND)**strongest:.0f} Mb/s ({100*p[strongest]/tot:.1f}%) | "+" ".join(line))
