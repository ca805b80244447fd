"""What holds device memory at a case's peak, from PyTorch's memory history (the runner's --profile-dir).

The runner records the caching allocator's history (torch.cuda.memory._record_memory_history, python
stacks) from before the case's model is built, brackets its profiled step between two marker
allocations of sizes no tensor of the suite's layouts has (STEP_BEGIN_BYTES, STEP_END_BYTES), takes
torch.cuda.memory._snapshot() and hands its device trace here. This module needs no torch: it replays
the trace entries ({action, addr, size, frames: [{filename, line, name}]}, as torch/cuda/_memory_viz.py
reads them) and names, by allocating source line, the blocks alive at the step's start and at its peak.

Accounting follows torch.cuda.memory_allocated: an 'alloc' adds, a 'free_requested' subtracts (the
allocator lowers allocated_bytes when the tensor is freed, before pending stream uses end; its later
'free_completed' changes nothing here). Sizes are the requested bytes the trace records, which can be
below the allocator's rounded block sizes (multiples of 512 B): the replay's peak may sit a little under
max_memory_allocated, and the summary gives both."""

from __future__ import annotations

import re

STEP_BEGIN_BYTES = 7777  # odd: no fp32/bf16 tensor of whole elements has it
STEP_END_BYTES = 7779
BEFORE = "(before the history)"  # the site of blocks allocated before recording began
# deepspeed/: ZeRO's own buffers (stage3.py, partition_parameters.py), whether DeepSpeed is installed or
# carried (.deps/deepspeed/site, scripts/prepare_deepspeed_deps.sh).
ROLE_FILES = ("torch/distributed/", "shardaccum_real/", "torch/autograd/", "torch/nn/", "deepspeed/")
_SHORT = re.compile(r".*?(site-packages/|bench/real/|\.deps/deepspeed/site/)")


def _short(filename: str) -> str:
    return _SHORT.sub("", filename)


def site_of(frames: list, depth: int = 2) -> str:
    """The allocating source lines of one block, innermost first: up to `depth` frames from FSDP, the
    runner, autograd or torch.nn ('file:line function', joined by ' < '); '(no python frame)' for an
    allocation made from C++ alone (e.g. the autograd engine accumulating a gradient, NCCL's buffers),
    or '(before the history)' when the trace entry has no frames key at all."""
    if frames is None:
        return BEFORE
    picked = [f for f in frames if any(r in f.get("filename", "") for r in ROLE_FILES)][:depth]
    if not picked:
        picked = frames[:1]
    if not picked:
        return "(no python frame)"
    return " < ".join(f"{_short(f.get('filename', '?'))}:{f.get('line', '?')} {f.get('name', '?')}" for f in picked)


def _by_site(live: dict) -> list:
    """[{site, bytes, blocks, largest}] of the live blocks, most bytes first."""
    acc: dict = {}
    for size, site in live.values():
        if size == 0 and site == BEFORE:
            continue
        a = acc.setdefault(site, {"site": site, "bytes": 0, "blocks": 0, "largest": 0})
        a["bytes"] += size
        a["blocks"] += 1
        a["largest"] = max(a["largest"], size)
    return sorted(acc.values(), key=lambda a: (-a["bytes"], a["site"]))


def _replay(entries: list, upto: int, allocated_before_history: int) -> tuple:
    """(live {addr: (bytes, site)}, total bytes, bytes freed at addresses never allocated) after
    entries[:upto]. A free of an unknown address was allocated before the history: it comes out of the
    BEFORE block."""
    # Always present, so that a free of an address never allocated (made before the history) comes
    # out of it and the live blocks keep summing to the total; _by_site leaves it out at 0 bytes.
    live = {-1: (allocated_before_history, BEFORE)}
    total, unknown = allocated_before_history, 0
    for e in entries[:upto]:
        action, addr, size = e.get("action"), e.get("addr"), int(e.get("size", 0))
        if action == "alloc":
            live[addr] = (size, site_of(e.get("frames", [])))
            total += size
        elif action == "free_requested":
            if addr in live:
                total -= live.pop(addr)[0]
                continue
            unknown += size
            total -= size
            live[-1] = (live[-1][0] - size, BEFORE)
    return live, total, unknown


def summarise(entries: list, allocated_before_history: int = 0, top: int = 25) -> dict:
    """The step between the markers: bytes live at its start and at its peak, each grouped by site (the
    `top` largest groups), and the sites of what the peak holds beyond the start (growth).

    entries: one device's trace ('device_traces'[i] of the snapshot), oldest first.
    allocated_before_history: torch.cuda.memory_allocated when the history began (bytes), counted as one
    block '(before the history)' so that the totals are the device's.
    Raises ValueError when the markers are missing or out of order (the step is then unknown: a history
    cut by max_entries loses its oldest entries). Frees of addresses never allocated are counted in
    `unknown_frees_bytes`, not fatal."""
    begin = next((i for i, e in enumerate(entries)
                  if e.get("action") == "alloc" and int(e.get("size", 0)) == STEP_BEGIN_BYTES), None)
    end = None if begin is None else next(
        (i for i in range(begin + 1, len(entries))
         if entries[i].get("action") == "alloc" and int(entries[i].get("size", 0)) == STEP_END_BYTES), None)
    if begin is None or end is None:
        raise ValueError("the memory history has no complete step between the markers of "
                         f"{STEP_BEGIN_BYTES} and {STEP_END_BYTES} bytes (was it cut by max_entries?)")
    start_live, start_total, _ = _replay(entries, begin, allocated_before_history)
    total, peak, peak_upto = start_total, start_total, begin
    for i in range(begin, end):
        e, size = entries[i], int(entries[i].get("size", 0))
        if e.get("action") == "alloc":
            total += size if size != STEP_BEGIN_BYTES else 0
            if total > peak:
                peak, peak_upto = total, i + 1
        elif e.get("action") == "free_requested" and size != STEP_BEGIN_BYTES:
            total -= size
    peak_live, _, _ = _replay(entries, peak_upto, allocated_before_history)
    unknown = _replay(entries, end, allocated_before_history)[2]
    peak_live = {a: v for a, v in peak_live.items() if v[0] != STEP_BEGIN_BYTES}
    start_sites, peak_sites = _by_site(start_live), _by_site(peak_live)
    start_by = {s["site"]: s["bytes"] for s in start_sites}
    peak_by = {s["site"]: s["bytes"] for s in peak_sites}
    growth = [{"site": k, "bytes": peak_by.get(k, 0) - start_by.get(k, 0)} for k in {*start_by, *peak_by}
              if peak_by.get(k, 0) != start_by.get(k, 0)]
    growth.sort(key=lambda g: (-abs(g["bytes"]), g["site"]))
    peak_bytes = sum(v[0] for v in peak_live.values())
    return {"start_bytes": start_total, "peak_bytes": peak_bytes, "peak_over_start_bytes": peak_bytes - start_total,
            "entries_in_step": end - begin - 1, "unknown_frees_bytes": unknown,
            "live_at_start": start_sites[:top], "live_at_peak": peak_sites[:top], "growth_at_peak": growth[:top]}
