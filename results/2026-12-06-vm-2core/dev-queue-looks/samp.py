import sys, csv, bisect
f=sys.argv[1]; lo=float(sys.argv[2]); hi=float(sys.argv[3]); k=int(sys.argv[4]) if len(sys.argv)>4 else 8
ts=[];qs=[];t0=None
for row in csv.reader(open(f)):
    if row[0]!="ab" or row[1]!="depart": 
        if row[0]=="ab" and t0 is None and row[1]!="direction": t0=int(row[2])
        continue
    t=int(row[2]); 
    if t0 is None: t0=t
    s=(t-t0)/1e9
    if s<lo: continue
    if s>hi: break
    ts.append(s); qs.append(int(row[4])/1e6)
b=lo
while b<hi-0.1:
    samp=[]
    for j in range(k):
        x=b+ (j+1)*0.1/k
        i=bisect.bisect_left(ts,x)
        # queue at instant x ~ queue of the next departure; if gap>1ms link idle -> 0
        if i<len(ts) and ts[i]-x<0.001: samp.append(qs[i])
        else: samp.append(0.0)
    print(f"{b:5.1f} one {samp[-1]:5.1f} min{k} {min(samp):5.1f}  samples {' '.join('%4.1f'%v for v in samp)}")
    b+=0.1
