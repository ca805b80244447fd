"""Where the suite's no-offload B on uniform:16x64M goes (issue 16): per stream and kernel, the GPU time of
one traced step of SSSS and of nnnS, in the suite (suite-uniform-none.trace.json.gz, the preset zero3's
axes without offload at 28e9c21, `--trace-steps 1 --cupti kernels`) and in DeepSpeed 0.19.8 ZeRO-3
(../../h100-zero3-profile-1206/traces/real-uniform-*-none.trace.json.gz, at 939527e). Both on H100s.
Run: python3 kernels.py > kernels.txt"""
import collections, gzip, json

HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."


def table(title, rows):
    """rows: (stream, kernel name, ms); prints the total per stream and the largest kernels."""
    per = collections.defaultdict(lambda: [0, 0.0])
    streams = collections.defaultdict(float)
    for stream, name, ms in rows:
        per[(stream, name[:60])][0] += 1
        per[(stream, name[:60])][1] += ms
        streams[stream] += ms
    print(title)
    print("  per stream (sum of kernel and copy times, ms): " +
          ", ".join(f"{s} {t:.1f}" for s, t in sorted(streams.items(), key=lambda x: -x[1])))
    for (stream, name), (n, ms) in sorted(per.items(), key=lambda x: -x[1][1])[:8]:
        print(f"  {stream:22s} {ms:7.1f} ms  {n:4d}x  {name}")


d = json.load(gzip.open(f"{HERE}/suite-uniform-none.trace.json.gz"))
ev = d["traceEvents"] if isinstance(d, dict) else d
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
for sched in ("SSSS", "nnnS"):
    table(f"suite {sched}", [(names[e["tid"]].replace("CUPTI ", ""), e["name"], e["dur"] / 1e3) for e in ev
                             if e.get("ph") == "X" and names.get(e.get("tid"), "").startswith("CUPTI")
                             and f"schedule:{sched}" in e["args"].get("case", "")])
for sched in ("SSSS", "nnnS"):
    path = f"{HERE}/../../h100-zero3-profile-1206/traces/real-uniform-{sched}-none.trace.json.gz"
    ev = json.load(gzip.open(path))["traceEvents"]
    table(f"DeepSpeed {sched} (stream 7: compute; the other: reduce_and_partition_stream)",
          [(f"stream {e['tid']}", e["name"], e["dur"] / 1e3) for e in ev
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")])
