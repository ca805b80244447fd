"""The compute stream's idle time between kernels that no D2H precedes, both sides (issue 16).

host_gap.py measured the GPU idle right after each blocking D2H. This is the rest of the host's
share: inside a unit's backward, after the host has come back from the copy's synchronisation, the
compute stream waits for each kernel as autograd launches it (a queue emptied by the sync, refilled
at the host's pace). Reads by_class.py's ops/SIDE-SCHEDULE.ops.csv.gz (the GPU rows of one traced
step) and prints per step: the gaps between consecutive compute kernels (every row that is not a
copy) shorter than 1 ms (longer ones are the suite's forward copy phases and the real forward's
waits for its parameters) that contain no D2H's end, in ms, their count, and the growth over
nnnS; for the real side also per micro-batch (split where a forward GEMM, cuBLAS's `tn` kernel,
follows a backward one). Run: python3 compute_gaps.py ops"""
import bisect, csv, gzip, os, sys

ops = sys.argv[1]
COPY = ("H2D", "D2H", "DtoD")


def rows(side, s):
    with gzip.open(os.path.join(ops, f"{side}-{s}.ops.csv.gz"), "rt") as f:
        return sorted((float(r["ts_us"]), float(r["ts_us"]) + float(r["dur_us"]), r["cls"])
                      for r in csv.DictReader(f))


def gaps(ev, lo=float("-inf"), hi=float("inf")):
    """(ms, count) of compute gaps < 1 ms in [lo, hi) with no D2H ending inside them."""
    d2h_ends = sorted(e[1] for e in ev if e[2] == "D2H")
    comp = [e for e in ev if e[2] not in COPY and lo <= e[0] < hi]
    total, n, x = 0.0, 0, comp[0][1]
    for a, b, _ in comp[1:]:
        if a > x and a - x < 1000:
            j = bisect.bisect_right(d2h_ends, a) - 1
            if not (j >= 0 and d2h_ends[j] >= x):
                total += a - x
                n += 1
        x = max(x, b)
    return total / 1e3, n


def microbatches(ev):
    bounds, prev = [ev[0][0]], None
    for a, _, c in ev:
        if c.startswith("GEMM"):
            fwd = c == "GEMM tn"
            if fwd and prev is False:
                bounds.append(a)
            prev = fwd
    return bounds + [max(e[1] for e in ev)]


for side in ("real", "suite"):
    base = None
    for s in ("nnnS", "SSSS", "nSnS", "SnSS"):
        ev = rows(side, s)
        ms, n = gaps(ev)
        base = ms if s == "nnnS" else base
        line = f"{side:5} {s}: compute gaps {ms:6.1f} ms in {n:5} (over nnnS {ms - base:+6.1f})"
        if side == "real":
            b = microbatches(ev)
            line += "  per micro-batch " + " ".join(
                f"{s[i]} {gaps(ev, b[i], b[i + 1])[0]:5.1f}" for i in range(4))
        print(line)
