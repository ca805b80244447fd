"""Which DeepSpeed allocations make the real peak-delta rows differ from the preset's (issue 16).

Reads memory/real-MODEL-SCHED-OFFLOAD.memory.json (the real runner's --profile-dir: the device
blocks live at the traced step's start and at its peak, by allocating source line, from PyTorch's
memory history; bench/real/shardaccum_real/memhist.py) and prints, per model, the blocks live at the
start of the no-offload step and not of the offloaded one (what offload_optimizer moves to the host at
deepspeed.initialize), then per case its peak over its start and the blocks that grew to it (GB).
Run: python3 memory.py > memory.txt"""
import glob, json


def load(model, sched, off):
    return json.load(open(f"memory/real-{model}-{sched}-{off}.memory.json"))


GB = 1e9
for model in sorted({p.split("-")[1] if "uniform" in p else "gpt2-xl" for p in glob.glob("memory/*.json")}):
    none, cpu = load(model, "nnnS", "none"), load(model, "nnnS", "cpu")
    at_cpu = {b["site"]: b["bytes"] for b in cpu["live_at_start"]}
    print(f"{model}: live at the start of nnnS without offload {none['start_bytes'] / GB:.2f} GB, with offload "
          f"{cpu['start_bytes'] / GB:.2f} GB; without offload only:")
    for b in none["live_at_start"]:
        extra = b["bytes"] - at_cpu.get(b["site"], 0)
        if extra > 1e6: print(f"    {extra / GB:6.2f} GB  {b['site']}")
    for sched in ("nnnS", "SSSS"):
        for off in ("none", "cpu"):
            m = load(model, sched, off)
            print(f"  {sched} {off:4s}: peak {m['peak_bytes'] / GB:6.2f} GB, over its start "
                  f"{m['peak_over_start_bytes'] / GB:5.2f} GB, grown by:")
            for b in m["growth_at_peak"]:
                if b["bytes"] > 1e6: print(f"        {b['bytes'] / GB:6.2f} GB  {b['site']}")
