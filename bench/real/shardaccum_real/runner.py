"""One runner process: every case of one system, in order, then the JSON (rank 0). A case that is
refused or fails is written as error_occurred and the run goes on. Needs torch."""

from __future__ import annotations

import gc
import math
import os
import socket
import sys
import traceback

import torch
import torch.distributed as dist

from . import cases as cases_mod
from . import context, dtypes, launch as launch_mod, layout as layout_mod, measure, oracle, output, trace
from .model import StepState, Workload

DYADIC = 0  # the generator's mode (capi/shardaccum_gen.h GenMode): exact sums, see docs/DESIGN.md §5
TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def _progress(msg: str) -> None:
    print(f"[real] {msg}", file=sys.stderr, flush=True)


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def init_distributed(opts, ln) -> torch.device:
    """The process group (nccl on cuda, gloo on cpu) and this rank's device."""
    os.environ.update(launch_mod.rendezvous_env(dict(os.environ), ln))
    if os.environ.get("MASTER_PORT") == "0":
        os.environ["MASTER_PORT"] = _free_port()
    if opts.device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda: torch sees no CUDA device (torch.cuda.is_available() is False); "
                               "use --device cpu for the development mode")
        local = ln.local_rank if ln.local_rank is not None else ln.rank % torch.cuda.device_count()
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        backend = "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend, rank=ln.rank, world_size=ln.world,
                            **({"device_id": device} if device.type == "cuda" else {}))
    torch.backends.cuda.matmul.allow_tf32 = False  # the context says tf32 off
    torch.backends.cudnn.allow_tf32 = False
    return device


def _make_system(case, wl, plan, device, world: int):
    """The case's system around the workload (systems/): FSDP2, FSDP1, or DeepSpeed ZeRO-3/ZeRO-2."""
    if case.system == "fsdp2":
        from .systems.fsdp2 import FSDP2
        return FSDP2(wl, plan, case.offload, device, world)
    if case.system == "fsdp1":
        from .systems.fsdp1 import FSDP1
        return FSDP1(wl, plan, case.offload, device, world)
    from .systems.zero import Zero
    return Zero(wl, plan, case.offload, device, world, cases_mod.ZERO_STAGES[case.system], case.schedule)


def _merged_verdict(v, world: int):
    """(correct, max_rel_err or None when not finite, bound) over every rank's verdict (oracle.Verdict.merge)."""
    if world > 1:
        all_v = [None] * world
        dist.all_gather_object(all_v, v)
        v = all_v[0]
        for other in all_v[1:]:
            v.merge(other)
    err = v.max_unit_rel_err
    return int(v.correct), (err if math.isfinite(err) else None), v.bound


def _check_coverage(pieces: list, lay, world: int) -> None:
    """Raises RuntimeError (an error case: nothing was checked) unless the pieces of all ranks cover
    every unit's elements exactly once (oracle.coverage_problems)."""
    spans = [(u, f, int(t.numel())) for u, f, t in pieces]
    if world > 1:
        everyone = [None] * world
        dist.all_gather_object(everyone, spans)
        spans = [s for rank_spans in everyone for s in rank_spans]
    problems = oracle.coverage_problems(spans, {u.index: u.numel for u in lay.units})
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise RuntimeError("the gradient pieces read from the system do not cover the layout, so it was not "
                           "checked: " + "; ".join(problems[:3]) + more)


def run_case(case, lay, triple, opts, gen, device, rank: int, world: int, settings: list) -> tuple:
    """One case; returns (counters, cpu_time_ms). Raises dtypes.Refused or any failure."""
    plan = dtypes.plan(case.system, triple)
    k = len(case.schedule)
    dmax = gen.dyadic_max(triple, k, world)
    state = StepState(opts.seed, rank, world, DYADIC, dmax, lambda n: gen.shard_numel(n, world))
    # FSDP1 with CPUOffload(offload_params=True) expects the module on the CPU (it moves what it shards).
    build_on = torch.device("cpu") if case.system == "fsdp1" and case.offload == "cpu" else device
    leftover = measure.device_allocated(device)  # what earlier cases left (output.net_of_leftover)
    pinned_leftover = measure.pinned_allocated(device)
    requested_leftover = measure.device_requested(device)
    stem = output.case_file_stem(case.name) + (f".rank{rank}" if world > 1 else "")
    keep = os.path.join(opts.profile_dir, stem) if opts.profile_dir else None
    history_from = measure.start_memory_history(device) if keep and opts.memory_history else None
    try:
        wl = Workload(lay, state, gen.fill, TORCH_DTYPES[plan.storage], build_on, case.tokens)
        system = _make_system(case, wl, plan, device, world)
        settings.append((case.system, system.settings()))
    except BaseException:
        if history_from is not None:
            measure.stop_memory_history(device)
        raise
    try:
        t = measure.timed_steps(system, state, case.schedule, 0, opts.warmup, opts.steps, device, _progress)
        step = t["last_step"]

        def okey_of(unit: int) -> dict:
            n = lay.units[unit].numel
            return {"seed": opts.seed, "step": step, "k": k, "world_size": world, "unit": unit, "numel": n,
                    "mode": DYADIC, "grad_dtype": dtypes.CODES[triple.grad], "dyadic_max": dmax,
                    "shard": gen.shard_numel(n, world)}

        pieces = system.pieces(rank)
        _check_coverage(pieces, lay, world)
        correct, err, bound = _merged_verdict(gen.verdict(triple, DYADIC, k, world, okey_of, pieces), world)
        # The pieces are views of the gradients: held, they would keep the last measured step's
        # gradients alive through the profiled step after zero_grad (4 GiB on uniform:16x64M).
        del pieces
        counters = output.net_of_leftover(dict(t["counters"], correct=correct, max_rel_err=err, err_bound=bound),
                                          leftover, pinned_leftover, requested_leftover)
        profiled = measure.profiled_step(system, state, case.schedule, step + 1, device, keep, history_from)
        sources = profiled.pop(trace.SOURCES_KEY, {})
        if sources:
            _progress("  gradient H2D by range > op: " + ", ".join(f"{k}: {v} B" for k, v in sources.items()))
        counters.update(profiled)
        return counters, t["cpu_time_ms"]
    finally:
        if history_from is not None:
            measure.stop_memory_history(device)
        system.zero_grad()
        system.release()
        measure.release_storage(system.module)
        del system, wl
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _layouts(opts) -> tuple:
    """{model: Layout or LayoutError} and {model: where it came from}."""
    files = {}
    for f in opts.layout_json:
        lay = layout_mod.load_file(f)
        files[lay.spec] = (lay, f)
    out, src = {}, {}
    for m in opts.models:
        if m in files:
            out[m], src[m] = files[m][0], f"--layout-json {files[m][1]}"
            continue
        try:
            out[m] = layout_mod.describe(opts.bench, m)
            src[m] = f"{opts.bench} --describe-layout --model {m}"
        except layout_mod.LayoutError as e:
            out[m], src[m] = e, f"error: {e}"
    return out, src


def run(opts, ln, gen_factory) -> int:
    """Runs every case and writes opts.out on rank 0; returns the exit status (cli.EXIT_*)."""
    from .cli import EXIT_CASE_ERROR, EXIT_OK
    device = init_distributed(opts, ln)
    rank, world = ln.rank, ln.world
    gen = gen_factory()
    measure.warm_cublas(device)
    layouts, sources = _layouts(opts)
    all_cases, skipped = cases_mod.product(opts.system, opts.models, world, opts.schedules, opts.offloads,
                                           [t.name for t in opts.dtypes], opts.tokens)
    for case, why in skipped:
        _progress(f"skipped {case.name}: {why}")
    triples = {t.name: t for t in opts.dtypes}
    entries, settings, failed = [], [], 0
    facts = {"torch_version": torch.__version__, "cuda_version": torch.version.cuda or "none",
             "nccl_version": ".".join(map(str, torch.cuda.nccl.version())) if device.type == "cuda" else "none",
             "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "none (--device cpu)",
             # The CPU add's intra-op threads (at::parallel_for): the suite's --host-threads to compare.
             "torch_num_threads": torch.get_num_threads()}
    if opts.profile_dir:
        facts["profile_dir"] = (f"{opts.profile_dir}: per case the profiled step's trace (.trace.json.gz)" + (
            " and, on CUDA, what held device memory at its start and peak (.memory.json); PyTorch's memory "
            "history was recorded from each case's start, its cost in the timings" if opts.memory_history else
            "; no memory history recorded (--memory-history off)"))

    def write() -> None:
        """The JSON of the cases done so far, atomically, on rank 0: after every case, so a run killed
        by a time limit keeps what it finished (context 'partial' says how much)."""
        if rank != 0:
            return
        done = [dict(e) for e in entries]
        output.add_accum_costs(done, all_cases[:len(done)])
        ctx = context.build(opts, world, facts, getattr(gen, "path", "unknown"), sources, settings,
                            dtypes.mapping_text(), measure.PINNED_STAT_KEY)
        ctx["skipped_cases"] = [{"name": c.name, "reason": why} for c, why in skipped]
        if len(done) < len(all_cases):
            ctx["partial"] = f"{len(done)} of {len(all_cases)} cases: the run had not finished"
        output.write_atomic(opts.out, {"context": ctx, "benchmarks": done})

    for i, case in enumerate(all_cases):
        _progress(f"case {i + 1}/{len(all_cases)}: {case.name}")
        lay = layouts[case.model]
        try:
            if isinstance(lay, Exception):
                raise lay
            counters, cpu = run_case(case, lay, triples[case.dtype], opts, gen, device, rank, world, settings)
            entries.append(output.entry(case, counters, iterations=opts.steps, cpu_time_ms=cpu))
            _progress(f"  {entries[-1]['label']}, step {counters['step_ms']:.1f} ms")
        except Exception as e:  # recorded, and the run goes on
            failed += 1
            msg = f"{type(e).__name__}: {e}"
            if not isinstance(e, (dtypes.Refused, layout_mod.LayoutError)):
                traceback.print_exc(file=sys.stderr)
            _progress(f"  error: {msg}")
            entries.append(output.entry(case, {}, error=msg[:2000]))
        if i + 1 < len(all_cases):
            write()
    write()
    if rank == 0:
        n = len(entries)
        _progress(f"wrote {opts.out}: {n} case{'s' if n != 1 else ''}, {failed} errored, {len(skipped)} skipped")
    dist.destroy_process_group()
    return EXIT_CASE_ERROR if failed else EXIT_OK
