"""Experiment: per-thread CPU time and context switches of a running process, sampled."""
import os, sys, time, collections
pid = int(sys.argv[1]); period = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
tick = os.sysconf('SC_CLK_TCK')
def snap():
    out = {}
    try:
        tids = os.listdir(f'/proc/{pid}/task')
    except FileNotFoundError:
        return None
    for t in tids:
        try:
            st = open(f'/proc/{pid}/task/{t}/stat').read()
            f = st[st.rindex(')') + 2:].split()
            cpu = (int(f[11]) + int(f[12])) / tick
            s = open(f'/proc/{pid}/task/{t}/status').read().split('\n')
            d = {l.split(':')[0]: l.split(':')[1].strip() for l in s if ':' in l}
            out[t] = (cpu, int(d['voluntary_ctxt_switches']), int(d['nonvoluntary_ctxt_switches']), f[0], int(f[36]) if len(f) > 36 else -1)
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            pass
    return out
prev = snap(); t0 = time.time(); first = dict(prev or {})
windows = []
last_t = t0
while True:
    time.sleep(period)
    cur = snap()
    if not cur:
        break
    now = time.time()
    if now - last_t >= 0.5:
        busy = {t: cur[t][0] - prev.get(t, (0, 0, 0, '', -1))[0] for t in cur}
        inv = {t: cur[t][2] - prev.get(t, (0, 0, 0, '', -1))[2] for t in cur}
        vol = {t: cur[t][1] - prev.get(t, (0, 0, 0, '', -1))[1] for t in cur}
        tot = sum(busy.values()) / (now - last_t)
        top = sorted(cur, key=lambda t: -busy[t])[:20]
        windows.append((round(now - t0, 1), round(tot, 1), [(t, round(busy[t] / (now - last_t), 2), vol[t], inv[t], cur[t][4]) for t in top]))
        prev = cur; last_t = now
print(f'{len(windows)} windows of 0.5 s; per window: seconds, cores busy, top threads (tid, cores, vol, invol switches, cpu)')
for w in windows:
    if w[1] > 4:
        print(w[0], w[1], ' '.join(f'{t}:{c}/{v}/{i}@{p}' for t, c, v, i, p in w[2]))
