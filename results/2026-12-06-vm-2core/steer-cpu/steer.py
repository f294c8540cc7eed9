import json,sys,glob,os
for d in sys.argv[1:]:
    for f in sorted(glob.glob(d+'/*.log')):
        for l in open(f):
            try: r=json.loads(l)
            except: continue
            if r.get("type")=="summary":
                gb=r["bytes"]/1e9
                st=r.get("steer_cpu_seconds")
                print(f"{os.path.basename(d):8} {os.path.basename(f):40} {r['mode']:12} {r['seconds']:6.1f} s  sender CPU {r['cpu_seconds']:.3f} s ({r['cpu_seconds']/gb:.3f} s/GB)  steer " + ("-" if st is None else f"{st*1000:.1f} ms ({st/gb*1000:.1f} ms/GB, {st/r['seconds']*1000:.2f} ms/s)"))
