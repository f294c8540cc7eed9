import re,sys
def load(p):
    d={};summ={}
    for l in open(p):
        m=re.search(r'seed (\d+)\s',l)
        if m and ':' in l:
            d[m.group(1)]=(l.split()[0], re.findall(r'([\w-]+):(holds|FAILS)',l), l.strip())
        m2=re.match(r'^([\w-]+)\s+(\d+)/(\d+)\s',l)
        if m2: summ[m2.group(1)]=(int(m2.group(2)),int(m2.group(3)))
    return d,summ
tot={}
for s in sys.argv[1:]:
    a,sa=load(f'../sim-dev-at-mu/after-{s}.txt')
    b,sb=load(f'new-{s}.txt')
    for k in sorted(set(a)&set(b)):
        if a[k][1]!=b[k][1]:
            print(s, a[k][0], 'before', [x for x in a[k][1] if x not in b[k][1]], 'after', [x for x in b[k][1] if x not in a[k][1]])
            print('   ', a[k][2][:60], '|', re.sub(r'.*seed \d+','',a[k][2])[:120]); print('   ', ' '*60, '|', re.sub(r'.*seed \d+','',b[k][2])[:120])
    for c in sa:
        x=tot.setdefault(c,[0,0,0]); x[0]+=sa[c][0]; x[1]+=sb.get(c,(0,0))[0]; x[2]+=sa[c][1]
for c,(x,y,n) in tot.items(): print(f'{c:24} {x}/{n} -> {y}/{n}')
