"""The runner's command line: every flag is validated here, before torch is imported; a bad flag
exits 2 with a message naming it and the fix (the suite's convention)."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import dtypes, layout, schedule
from .cases import OFFLOADS, SYSTEMS, ZERO_STAGES, zero_skip_reason

EXIT_OK, EXIT_CASE_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_ROOT = Path(__file__).resolve().parents[3]
# build/ (preset default) where it was built, else build-host/ (what the scripts build with no GPU).
DEFAULT_BENCH = next((p for p in (_ROOT / d / "bench" / "shardaccum_bench" for d in ("build", "build-host"))
                      if p.is_file()), _ROOT / "build" / "bench" / "shardaccum_bench")

DESCRIPTION = """Real PyTorch FSDP2 / FSDP1 and DeepSpeed ZeRO-3 / ZeRO-2 on the suite's layouts, gradients,
schedules and oracle (bench/real/README.md). One process runs every case of one --system: plain (world 1) or under
torchrun (srun / mpirun environments are read as well). Each case: --warmup steps, --steps timed
steps, one profiled step (never timed), then the oracle on every rank's accumulated shard of the last
measured step. Results: Google Benchmark JSON at --out (strict, written atomically).

Needs torch (2.11; CUDA for --device cuda) and the suite's libshardaccum_gen.so (env
SHARDACCUM_GEN_LIB, else build/capi/ or build-host/capi/) plus shardaccum_bench --describe-layout
(--bench, or --layout-json). --help and flag checks need neither torch nor a GPU.

Schedules: canonical names for --k (no-sync = n^(K-1)S, sync = S^K, interleaved-nosync-last (K=4 nSnS),
interleaved-sync-last (K=4 SnSS)), `all` = the four, or literals of n/S ending in S (their length is K).
Dtype triples grad-reduce-accum: the model is stored in accum; param_dtype = grad, reduce_dtype =
reduce (FSDP2 MixedPrecisionPolicy / FSDP1 MixedPrecision). fsdp2 refuses grad != reduce (no-sync
would accumulate in the reduce dtype); triples other than the suite's (fp32-fp32-fp32,
bf16-bf16-fp32, bf16-bf16-bf16) are refused; a refused case is written as error_occurred.

At world >= 2 it refuses to start unless NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
NVSHMEM_DISABLE_NVLS=1 are set.

Exit status: 0 the JSON was written and no case errored (a WRONG verdict is a finding, not an error);
1 the JSON was written and at least one case errored (error_occurred), or the run failed after the
flags were accepted; 2 bad flags, an unsafe/inconsistent launch environment, or no case to run (every
one skipped); 130 interrupted (Ctrl-C): the JSON then holds the cases finished before it (it is
rewritten after every case, its context's 'partial' saying how many)."""


def _check_out(out: str) -> None:
    """--out must be a file path in a folder this process can write in; checked by creating and removing
    a probe file there, so that a run never ends with its results unwritable."""
    p = Path(out)
    if p.is_dir():
        raise UsageError(f"--out {out}: is a folder; give a file path such as {p / 'real.json'}")
    parent = p.resolve().parent
    if parent.exists() and not parent.is_dir():
        raise UsageError(f"--out {out}: {parent} is a file, not a folder; give a path in a folder")
    if not parent.is_dir():
        raise UsageError(f"--out {out}: its folder does not exist; create it first")
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=f".{p.name}.", suffix=".probe"):
            pass
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write in {parent} ({e.strerror}); choose a writable folder") from None


class UsageError(Exception):
    """A bad flag: the message names it and says how to fix it."""


@dataclass(frozen=True)
class Options:
    system: str
    models: list
    schedules: list   # letters
    k: int
    dtypes: list      # dtypes.Triple
    offloads: list
    steps: int
    warmup: int
    seed: int
    tokens: int
    out: str
    bench: str
    layout_json: list
    device: str
    profile_dir: str | None = None
    memory_history: bool = True


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own errors (unknown flag, missing value) also exit 2
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    # allow_abbrev off: --mod would otherwise be taken as --model (the suite's CLI takes whole flags only)
    p = _Parser(prog="bench/real/run.py", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                allow_abbrev=False)
    p.add_argument("--system", required=True, help="fsdp2 (fully_shard), fsdp1 (FullyShardedDataParallel), "
                   "zero3 or zero2 (DeepSpeed ZeRO stage 3 / 2, offload_optimizer for --offload cpu*)")
    p.add_argument("--model", default="uniform:16x64M", help="layouts, comma-separated (default uniform:16x64M)")
    p.add_argument("--schedule", default="all", help="schedules, comma-separated, or all (default)")
    p.add_argument("--k", default="4", help="micro-batches per step for canonical names (default 4)")
    p.add_argument("--dtype", default="fp32-fp32-fp32", help="grad-reduce-accum triples or all")
    p.add_argument("--offload", default="cpu,none", help="cpu (CPU offload, pinned), cpu-pageable (pin_memory "
                   "false: fsdp2, zero3, zero2), none, or all (default cpu,none)")
    p.add_argument("--steps", default="2", help="measured steps per case (default 2)")
    p.add_argument("--warmup", default="1", help="warm-up steps per case (default 1)")
    p.add_argument("--seed", default="1", help="the generator's seed (default 1)")
    p.add_argument("--tokens", default="0", help="T > 0: GEMMs of 2*T*numel forward and 4*T*numel backward FLOPs")
    p.add_argument("--out", default=None, help="the JSON file (default real-SYSTEM.json)")
    p.add_argument("--bench", default=str(DEFAULT_BENCH), help="shardaccum_bench for --describe-layout "
                   "(default: build/bench/shardaccum_bench of this checkout, else build-host/'s)")
    p.add_argument("--layout-json", default="", help="saved describe-layout documents, comma-separated, used "
                   "instead of --bench for the models they describe (their spec)")
    p.add_argument("--device", default="cuda", help="cuda (default), or cpu: a development mode on gloo whose "
                   "times are host times (the JSON's time_domain says so); fsdp1 there with --offload none only")
    p.add_argument("--profile-dir", default=None, help="a folder (created if missing) that keeps, per case, the "
                   "profiled step's Kineto trace (CASE.trace.json.gz, ui.perfetto.dev) and, on cuda, what held device "
                   "memory at that step's start and peak, by allocating source line (CASE.memory.json: PyTorch's "
                   "memory history, recorded from the case's start, so its cost is in that run's timings: a "
                   "diagnosis run, not a timing run)")
    p.add_argument("--memory-history", default="on", help="on (default) or off: with --profile-dir, off keeps "
                   "the traces without CASE.memory.json and records no memory history, whose python stack per "
                   "allocation lengthens the host's time (DeepSpeed's flushes allocate per parameter)")
    return p


def _check_profile_dir(d: str) -> None:
    """--profile-dir: created when missing (its parent must exist), then probed for writing, so that a
    long run never ends with its profiles unwritable."""
    p = Path(d)
    if p.exists() and not p.is_dir():
        raise UsageError(f"--profile-dir {d}: is a file; give a folder")
    if not p.exists():
        if not p.resolve().parent.is_dir():
            raise UsageError(f"--profile-dir {d}: its parent folder does not exist; create it first")
        try:
            p.mkdir(exist_ok=True)  # every rank of a torchrun parses the flags
        except OSError as e:
            raise UsageError(f"--profile-dir {d}: cannot create it ({e.strerror}); choose a writable folder") from None
    try:
        with tempfile.NamedTemporaryFile(dir=p, prefix=".probe."):
            pass
    except OSError as e:
        raise UsageError(f"--profile-dir {d}: cannot write in it ({e.strerror}); choose a writable folder") from None


def _int(text: str, flag: str, lo: int, hi: int | None = None) -> int:
    """A decimal integer as the suite's CLI takes it (bench/cli_values.cpp): ASCII digits only, with at
    most a leading '-' (no '+', '_', spaces, hex or other scripts' digits, which int() would take)."""
    if not re.fullmatch(r"-?[0-9]+", text):
        raise UsageError(f"{flag} '{text[:40]}': not a decimal integer (digits only: no '+', '_', spaces or hex)")
    v = int(text)
    if v < lo or (hi is not None and v > hi):
        raise UsageError(f"{flag} {v}: must be " + (f"in {lo}..{hi}" if hi is not None else f">= {lo}"))
    return v


def _list(text: str, flag: str) -> list:
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise UsageError(f"{flag} '{text}': an empty value; give a comma-separated list")
    return items


def parse(argv: list) -> Options:
    """Options from argv (without the program name); UsageError naming the flag on any bad value."""
    a = _parser().parse_args(argv)
    if a.system not in SYSTEMS:
        raise UsageError(f"--system '{a.system}': give one of {', '.join(SYSTEMS)}")
    k = _int(a.k, "--k", 1, schedule.MAX_MICRO_BATCHES)
    try:
        scheds = schedule.parse_list(_list(a.schedule, "--schedule"), k)
        triples = dtypes.parse_list(_list(a.dtype, "--dtype"))
    except ValueError as e:
        raise UsageError(str(e)) from None
    if a.system in ZERO_STAGES and all(zero_skip_reason(a.system, s) for s in scheds):
        raise UsageError(f"--schedule {a.schedule}: {a.system} can run none of these "
                         f"({zero_skip_reason(a.system, scheds[0])}); give S^K or n^(K-1)S, e.g. SSSS,nnnS")
    offloads = _list(a.offload, "--offload")
    if "all" in offloads and len(offloads) > 1:
        raise UsageError("--offload 'all' must be alone (it means cpu,cpu-pageable,none)")
    offloads = list(OFFLOADS) if offloads == ["all"] else offloads
    for o in offloads:
        if o not in OFFLOADS:
            raise UsageError(f"--offload '{o}': give cpu, cpu-pageable, none or all")
    if a.device not in ("cuda", "cpu"):
        raise UsageError(f"--device '{a.device}': give cuda or cpu")
    if a.system == "fsdp1" and "cpu-pageable" in offloads:
        raise UsageError("--offload cpu-pageable with --system fsdp1: FSDP1's CPUOffload always pins host memory "
                         "(it has no pin_memory knob); give --offload cpu or none")
    if a.system in ("zero3", "zero2") and importlib.util.find_spec("deepspeed") is None:
        raise UsageError(f"--system {a.system} needs deepspeed, which this python cannot import: pip install "
                         "deepspeed==0.19.8 (for the GPU machines: scripts/prepare_deepspeed_deps.sh, bench/real/README.md)")
    if a.system == "fsdp1" and a.device == "cpu" and "cpu" in offloads:
        # FSDP1 runs on the CPU with device_id=cpu, but CPUOffload pins host memory, which needs CUDA.
        raise UsageError("--offload cpu with --system fsdp1 --device cpu: FSDP1's CPUOffload pins host memory, "
                         "which needs CUDA; give --offload none on the CPU, or --device cuda")
    if a.out is not None and not a.out.strip():
        raise UsageError("--out '': an empty path; give the JSON file to write (default real-SYSTEM.json)")
    out = a.out or f"real-{a.system}.json"
    _check_out(out)
    models = list(dict.fromkeys(_list(a.model, "--model")))
    layouts = _list(a.layout_json, "--layout-json") if a.layout_json else []
    for f in layouts:
        if not Path(f).is_file():
            what = "a directory, not a file" if Path(f).is_dir() else "no such file"
            raise UsageError(f"--layout-json {f}: {what}")
        try:  # parsed here, before torch starts, so a broken file is a flag error
            spec = layout.load_file(f).spec
        except layout.LayoutError as e:
            raise UsageError(str(e)) from None
        if spec not in models:
            raise UsageError(f"--layout-json {f}: it describes {spec!r}, which no --model names "
                             f"({', '.join(models)}); add --model {spec} or leave the file out")
    described = {layout.load_file(f).spec for f in layouts}
    for m in models:
        if m in described:
            continue
        try:  # --describe-layout needs no torch: an unknown model or a missing binary is a flag error
            layout.describe(a.bench, m)
        except layout.LayoutError as e:
            raise UsageError(str(e)) from None
    steps, warmup = _int(a.steps, "--steps", 1), _int(a.warmup, "--warmup", 0)
    seed, tokens = _int(a.seed, "--seed", 0, 2**64 - 1), _int(a.tokens, "--tokens", 0)
    if a.memory_history not in ("on", "off"):
        raise UsageError(f"--memory-history {a.memory_history}: give on or off")
    if a.memory_history == "off" and a.profile_dir is None:
        raise UsageError("--memory-history off: only with --profile-dir (without it no history is recorded)")
    if a.profile_dir is not None:  # last: it creates the folder, which no other bad flag should
        if not a.profile_dir.strip():
            raise UsageError("--profile-dir '': an empty path; give a folder, or leave the flag out")
        _check_profile_dir(a.profile_dir)
    return Options(a.system, models, scheds, k, triples,
                   list(dict.fromkeys(offloads)), steps, warmup, seed, tokens, out, a.bench, layouts, a.device,
                   a.profile_dir, a.memory_history == "on")


def parse_or_exit(argv: list) -> Options:
    """parse(), printing a UsageError on stderr and exiting 2."""
    try:
        return parse(argv)
    except UsageError as e:
        print(f"bench/real/run.py: {e} (--help lists the flags)", file=sys.stderr)
        sys.exit(EXIT_USAGE)
