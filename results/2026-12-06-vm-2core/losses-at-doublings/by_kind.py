import re,glob,math,collections,sys
pat=re.compile(r'XL t=([\d.]+) n (\d+)->(\d+) b=(\S+) r=([\d.]+) mu=Some\(([\d.]+)\) before (\d+)/(\d+) = \S+ after (\d+)/(\d+)')
def z(lb,sb,la,sa):
    L=la+lb
    if L==0 or sa==0 or sb==0: return 0.0
    f=sa/(sa+sb); return (la-L*f)/math.sqrt(L*f*(1-f))
tab=collections.defaultdict(lambda:[0,0])
for fn in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    name=fn.split('/')[-1][:-4]; kind=re.sub(r'^\d+-','',name).rsplit('-',1)[0]
    lines=sorted(set(open(fn).read().splitlines()))
    fired=False
    for l in lines:
        m=pat.search(l)
        if not m: continue
        t,f,n,b,r,mu,lb,sb,la,sa=m.groups()
        if b=='None': continue
        if float(r)<0.95*float(mu) and z(*map(int,(lb,sb,la,sa)))>2: fired=True
    cell=[l for l in lines if 'seed' in l and ('auto' in l or 'beside' in l)]
    if not cell: continue
    c=cell[0]
    if kind=='idle': cls='idle'
    elif kind.split('-')[0] in ('reno','cubic','mix') and 'arrive' not in kind:
        band=re.search(r'shared-band:(holds|FAILS)',c).group(1)
        m2=re.search(r'auto ([\d.]+), equal ([\d.]+)',c)
        above = band=='FAILS' and float(m2.group(1))>1.25*float(m2.group(2))
        red=' red ' in c
        cls='busy band '+('holds' if band=='holds' else ('above' if above else 'below'))+(' RED' if red else ' droptail')
    else: cls=kind
    tab[cls][0]+=1; tab[cls][1]+=fired
for k in sorted(tab): print(f"{k:32s} cells {tab[k][0]:3d}  signal fired {tab[k][1]:3d}")
