import re,sys
def load(f):
    d={}
    for l in open(f):
        m=re.search(r'seed (\d+)',l)
        if not m or l.startswith('claim'): continue
        kind=l.split()[0]
        key=(kind,m.group(1))
        a=re.search(r'auto ([\d.]+) \((\d+) streams\), best parallel ([\d.]+)',l)
        b=re.search(r'beside ([\d.]+) \(equal ([\d.]+), single ([\d.]+)\)',l)
        claims=re.findall(r'(\S+):(holds|FAILS)',l)
        if a: v=f"auto {a.group(1)} n{a.group(2)} par {a.group(3)}"
        elif b: v=f"beside {b.group(1)} eq {b.group(2)} single {b.group(3)}"
        else: v=''
        d[key]=(v,dict(claims))
    return d
A=load(sys.argv[1]);B=load(sys.argv[2])
for k in sorted(A):
    if k in B and A[k][1]!=B[k][1]:
        print(k, '\n   base ', A[k][0], {c:s for c,s in A[k][1].items()}, '\n   new  ', B[k][0], {c:s for c,s in B[k][1].items()})
def tally(d):
    t={}
    for v,c in d.values():
        for cl,s in c.items():
            h,n=t.get(cl,(0,0)); t[cl]=(h+(s=='holds'),n+1)
    return t
ta,tb=tally(A),tally(B)
for c in sorted(ta): print(f"{c:24s} base {ta[c][0]}/{ta[c][1]}  new {tb.get(c,(0,0))[0]}/{tb.get(c,(0,0))[1]}")
