"""Real FSDP1's offloaded gpt2-xl step micro-batch by micro-batch (issue 16, ninth pass).

Reads by_class.py's real-SCHEDULE.ops.csv.gz (GPU rows of one traced step) and prints per micro-batch
(split where a forward GEMM, cuBLAS's `tn` kernel, follows a backward one): its span, its forward's
span and busy time, its busy and idle time (ms), and per class of GPU work the time no other class
covers (ms). Run: python3 microbatches.py ops/ nnnS SSSS nSnS SnSS"""
import csv, gzip, os, sys
def union(iv):
    out=[]
    for a,b in sorted(iv):
        if out and a<=out[-1][1]: out[-1][1]=max(out[-1][1],b)
        else: out.append([a,b])
    return out
def alone(ev,c,lo,hi):
    mine=[(max(e[0],lo),min(e[1],hi)) for e in ev if e[2]==c and e[1]>lo and e[0]<hi]
    oth=union([(e[0],e[1]) for e in ev if e[2]!=c and e[1]>lo and e[0]<hi])
    tot=0
    for a,b in union(mine):
        x=a
        for p,q in oth:
            if q<=x: continue
            if p>=b: break
            tot+=max(0,p-x); x=max(x,q)
            if x>=b: break
        tot+=max(0,b-x)
    return tot/1e3
ops = sys.argv[1]
for s in sys.argv[2:]:
    ev=sorted((float(r['ts_us']),float(r['ts_us'])+float(r['dur_us']),r['cls'],r['stream'],r['name'][:50]) for r in csv.DictReader(gzip.open(os.path.join(ops, f'real-{s}.ops.csv.gz'),'rt')))
    bounds=[ev[0][0]]; prev=None
    for e in ev:
        if e[2].startswith('GEMM'):
            fwd=e[2]=='GEMM tn'
            if fwd and prev is False: bounds.append(e[0])
            prev=fwd
    bounds.append(max(e[1] for e in ev))
    print(s)
    for i in range(4):
        lo,hi=bounds[i],bounds[i+1]
        w=[e for e in ev if e[1]>lo and e[0]<hi]
        busy=sum(b-a for a,b in union([(max(e[0],lo),min(e[1],hi)) for e in w]))/1e3
        # forward/backward split: first GEMM other (nn) after lo
        bw=min(e[0] for e in w if e[2]=='GEMM other' and 'nn_n' in e[4])
        fb=sum(b-a for a,b in union([(max(e[0],lo),min(e[1],bw)) for e in w if e[0]<bw]))/1e3
        print(f"  mb{i} {s[i]}: {(hi-lo)/1e3:7.1f} ms (fwd {(bw-lo)/1e3:6.1f} busy {fb:6.1f}) busy {busy:7.1f} idle {(hi-lo)/1e3-busy:5.1f}",
              {c:round(alone(w,c,lo,hi),1) for c in ('H2D','D2H','GEMM other','GEMM tn','fill','other kernel','elementwise')})
