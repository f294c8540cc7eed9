import json,glob,os,statistics,sys
for run in sys.argv[1:]:
    for d in sorted(glob.glob(run+'/raw/*.auto.r0')):
        cell=os.path.basename(d).split('.')[0]
        recs=[json.loads(l) for l in open(d+'/snd0-bench.out') if l.startswith('{')]
        ph=[];last=None;qs=[];caps=[]
        for r in recs:
            if r.get('type')=='steer':
                key=(r['phase'],r['streams'])
                if key!=last: ph.append(f"{r['t']:.1f} {r['phase']} {r['streams']}"); last=key
                if r['t']>=15: qs.append(r['queue_ms']); caps.append(r['share_mbps']) if r['share_mbps'] else None
            if r.get('type')=='summary': s=r
        print(f"{os.path.basename(run)} {cell}: "+'; '.join(ph))
        print(f"   cpu {s['cpu_seconds']} steer {s['steer_cpu_seconds']} s over {s['seconds']}")
        if qs:
            qs.sort(); print(f"   records after 15 s {len(qs)} queue ms median {statistics.median(qs):.2f} p90 {qs[int(0.9*len(qs))]:.2f}" + (f" cap median {statistics.median(caps):.1f}" if caps else ''))
