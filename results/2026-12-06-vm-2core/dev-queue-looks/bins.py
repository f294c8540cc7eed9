import sys, csv, collections
f=sys.argv[1]; until=float(sys.argv[2]) if len(sys.argv)>2 else 10
bins=collections.defaultdict(lambda:[0,0,[],0,0])
t0=None
for row in csv.reader(open(f)):
    if row[0]!="ab": continue
    t=int(row[2])
    if t0 is None: t0=t
    s=(t-t0)/1e9
    if s>until: break
    b=bins[int(s*10)]
    if row[1]=="depart":
        b[0]+=int(row[3]); b[2].append(int(row[4]))
    elif row[1]=="drop": b[3]+=1
    elif row[1]=="arrive": b[4]+=int(row[3])
for k in sorted(bins):
    b=bins[k]; q=b[2]
    print(f"{k/10:5.1f} dep {b[0]*8/0.1/1e6:6.1f} arr {b[4]*8/0.1/1e6:6.1f} q avg {sum(q)/len(q)/1e6 if q else 0:6.1f} min {min(q)/1e6 if q else 0:6.1f} max {max(q)/1e6 if q else 0:6.1f} drops {b[3]}")
