#!/usr/bin/env python3
"""Issue 17's table from this folder's runs: per layout and backward, step_ms / bound_ms (bound_ratio) of
today's gpu-add and cpu-add and of the limit strategies (gpu-add-pipelined, cpu-add-pipelined, the preset
ideal, and without offload the world-1 limit --copy-in no-shard), division collective; then each limit
case's phases against their ceilings (D2H, H2D, accumulate; the CPU add against the host add ceiling
alone and against the two ceilings weighed by its time beside D2Hs, cpu_add_frac_shared_ceiling);
then, from run-cpu-repeats.json, each repetition of cpu-add and cpu-add-pipelined (synthetic), whose
CPU add's rate moves from case to case with the host memory.
A backward or a run that is not in the folder is left out or shown as –.
Run: python3 scripts/limit_table.py FOLDER > FOLDER/limit_table.md (FOLDER: a limit job's LIMIT_DIR, e.g.
reports/h100-limit-1207; an earlier folder keeps the copy it was made with)."""
import json
import os
import sys

if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
    sys.exit("usage: limit_table.py FOLDER (a folder holding a limit job's run-*.json)")
HERE = sys.argv[1]


def load(name):
    path = os.path.join(HERE, name)
    return json.load(open(path, encoding="utf-8"))["benchmarks"] if os.path.exists(path) else []


def find(rows, model, offload, extra=""):
    for b in rows:
        n = b["name"]
        if (f"model:{model}/" in n and f"/offload:{offload}/" in n and "division:collective" in n + extra
                and extra in n and b.get("run_type", "iteration") == "iteration"):
            return b
    return None


def cell(b):
    if b is None:
        return "–"
    return f"{b['step_ms']:.1f} / {b['bound_ms']:.1f} ({b['step_ms'] / b['bound_ms']:.2f})"


def frac(b, key):
    return f"{b[key]:.2f}" if b is not None and key in b else "–"


for bw, suffix in (("synthetic", "synthetic"), ("gemm T=1024", "gemm")):
    main, ideal, noshard = load(f"run-{suffix}.json"), load(f"run-ideal-{suffix}.json"), load(f"run-noshard-{suffix}.json")
    if not main:
        continue  # this backward did not run in this folder
    print(f"\n### {bw}\n")
    print("| layout | gpu-add | cpu-add | gpu-add-pipelined | `ideal` | cpu-add-pipelined | none | none, copy-in no-shard |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for m in ("uniform:16x64M", "gpt2-xl"):
        ide = next((b for b in ideal if f"model:{m}/" in b["name"]), None)
        ns = next((b for b in noshard if f"model:{m}/" in b["name"] and "copy-in:no-shard" in b["name"]), None)
        print(f"| `{m}` | {cell(find(main, m, 'gpu-add'))} | {cell(find(main, m, 'cpu-add'))} | "
              f"{cell(find(main, m, 'gpu-add-pipelined'))} | {cell(ide)} | {cell(find(main, m, 'cpu-add-pipelined'))} | "
              f"{cell(find(main, m, 'none'))} | {cell(ns)} |")
    print("\n| layout | case | D2H | H2D | accumulate | CPU add (alone ceiling) | CPU add (shared) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for m in ("uniform:16x64M", "gpt2-xl"):
        for off in ("gpu-add-pipelined", "cpu-add-pipelined", "cpu-add"):
            b = find(main, m, off)
            print(f"| `{m}` | {off} | {frac(b, 'd2h_frac_ceiling')} | {frac(b, 'h2d_frac_ceiling')} | "
                  f"{frac(b, 'accumulate_frac_ceiling')} | {frac(b, 'cpu_add_frac_ceiling')} | "
                  f"{frac(b, 'cpu_add_frac_shared_ceiling')} |")

reps = [b for b in load("run-cpu-repeats.json") if b.get("run_type", "iteration") == "iteration"]
if reps:
    print("\n### cpu-add and cpu-add-pipelined, three repetitions (synthetic, division collective)\n")
    print("| layout | offload | step_ms / bound_ms per repetition (bound_ratio) | CPU add (shared) per repetition |")
    print("| --- | --- | --- | --- |")
    for m in ("uniform:16x64M", "gpt2-xl"):
        for off in ("cpu-add", "cpu-add-pipelined"):
            rows = [b for b in reps if f"model:{m}/" in b["name"] and f"/offload:{off}/" in b["name"]]
            if rows:
                print(f"| `{m}` | {off} | {'; '.join(cell(b) for b in rows)} | "
                      f"{'; '.join(frac(b, 'cpu_add_frac_shared_ceiling') for b in rows)} |")
