import re,glob,math,sys
pat=re.compile(r'XL t=([\d.]+) n (\d+)->(\d+) b=(\S+) r=([\d.]+) mu=Some\(([\d.]+)\) before (\d+)/(\d+) = \S+ after (\d+)/(\d+)')
def z(lb,sb,la,sa):
    L=la+lb
    if L==0 or sa==0 or sb==0: return 0.0
    f=sa/(sa+sb)
    return (la-L*f)/math.sqrt(L*f*(1-f))
for fn in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    lines=open(fn).read().splitlines()
    seen=set(); ev=[]
    for l in lines:
        m=pat.search(l)
        if not m or l in seen: continue
        seen.add(l)
        t,f,n,b,r,mu,lb,sb,la,sa=m.groups()
        if b=='None': continue
        lb,sb,la,sa=map(int,(lb,sb,la,sa)); r=float(r); mu=float(mu)
        zz=z(lb,sb,la,sa)
        short = r < mu*0.95
        ev.append(f"{f}->{n}@{float(t):.0f} z={zz:.1f}{'*' if zz>2 and short else ''}{'' if short else '(mu)'}")
    cell=[l for l in lines if re.match(r'^[a-z]',l) and ('auto' in l or 'beside' in l) and 'seed' in l]
    verdict=' '.join(re.findall(r'([a-z-]+):(holds|FAILS)', cell[0]) and [a+':'+b[0] for a,b in re.findall(r'([a-z-]+):(holds|FAILS)', cell[0])]) if cell else ''
    kept=re.search(r'kept ([\d.]+)',cell[0]) if cell else None
    print(fn.split('/')[-1][:-4].ljust(22), (kept.group(0) if kept else '').ljust(10), verdict.ljust(60), ' '.join(ev))
