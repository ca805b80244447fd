"""Presets against the real systems: issue 16's validation rows and the report's section of them.

For every real case (bench/real/run.py) whose system has a preset, the suite case of that preset (same
model, world size, schedule, dtype and backward; `offload:cpu` beside the preset's own offload value,
`offload:none` beside its strategy without offload, pairing.preset_key) and, per figure, the real and the
suite value. The figures and their tolerances (docs/DESIGN.md §9, "Validation of the presets"):

| figure | real | suite | passes when |
|---|---|---|---|
| `correct` | verdict (1/0) | verdict | equal |
| `d2h_bytes`, `h2d_bytes` | the gradient path's bytes per step | the same counters | equal |
| `peak_device_delta_bytes` | peak − peak of the system's `nnnS` without offload | the same of the preset's, with the parameter shards added to that baseline and DeepSpeed's optimizer partition to its cases without offload (below) | within 10% of the real |
| `peak_pinned_bytes` | the pinned host peak (PyTorch's caching host allocator), cases with offload | the same counter | within 10% of the real |
| `d2h_ms`, `h2d_ms`, `cpu_add_ms`, `reduce_scatter_ms` | the profiled step's phase (ms) | the phase per step | within 20% of the real |
| `accum_cost_b_ms` | step − step of `nnnS` with the same offload | the same of the preset's cases | within 20% of the real |

Parameters: a real system without offload holds its parameter shards on the device for the whole step
(Σ P_u/N·b_g bytes), in the case and in its `nnnS` baseline alike; with offload it copies them in unit by
unit (`--param-traffic on` models that copy: `param_h2d_bytes` = 2·K·Σ P_u/N·b_g, strategies/param_traffic.cpp).
The suite's strategies without offload hold no parameter shards (under `--param-traffic on` only the
unit's unsharded parameter, as the real system does beside its shards), so the suite's baseline gains Σ P_u/N·b_g =
`param_h2d_bytes` / (2·K) of the offloaded case before the delta is taken; without that the two deltas
would differ by the parameters that offload moves off the device, a term of the real system that the
suite's gradient path does not hold. Likewise DeepSpeed's optimizer (`zero3`, `zero2`): without
`offload_optimizer` it keeps its fp32 master partition on the device for the whole step, with it on the
CPU (ZeRO-3: stage3.py 1172 `_create_fp32_partitions`, by PyTorch's memory history 4.29 GB on
`uniform:16x64M` and 6.23 on gpt2-xl, live at the start of every case without offload and of none with:
reports/h100-zero3-profile-1206/memory.txt). The suite models no optimizer, so each of its cases without
offload gains Σ P_u/N·4 bytes (the baseline's reduce-scatter input, one sync of every unit, over N·b_r),
in the case and in its baseline alike: it cancels between cases without offload and is taken from the
offloaded ones' deltas. `h2d_ms`: the suite's h2d phase times the parameter copies with the
gradient's (bench/counters.cpp), so on a case with parameter traffic the real side is its gradient
`h2d_ms` plus `param_h2d_ms`.

B is a difference of two step times, each a mean of few measured steps: where a B row falls outside, the
section also gives its measured spread (half the min-to-max range of `step_ms` of the four steps it is
made of: the real case and baseline, the suite's case and baseline) and, from the real runs' profiled
steps, the real B on the GPU (`gpu_busy_ms` of the case minus that of its baseline: bench/real/README.md).
A row outside by less than its spread is marked so: it stays outside (the count is not changed), with its
cause measured, the noise of the steps, not the gradient path. A real B far above its GPU-busy B is time
the GPU waited for the host (Python between FSDP's launches), which the suite's strategies do not model: a
row outside whose suite B is within the tolerance of the real B on the GPU is marked so, and stays outside.

Peak deltas are taken from max_memory_allocated, which counts the caching allocator's blocks rounded up
(to 512 B, and a large block left whole when less than 1 MiB would remain: c10/cuda/CUDACachingAllocator.cpp
`round_size`, `should_split`); the suite's pool counts the bytes asked for. Where the real runner also
recorded the peak in requested bytes (`peak_device_requested_bytes`, memory_stats' `requested_bytes`), a
peak-delta row outside gives that delta beside it and is marked where the suite is within tolerance of it:
it stays outside (the count is not changed), its cause measured, the allocator's rounding.

Pinned peaks are compared on the offloaded cases only: there the gradient path (saved shards, and the
parameters under `--param-traffic on`) is what the systems pin, in their allocator's power-of-two blocks,
which the presets model (docs/DESIGN.md §3 "Pieces and pinned blocks"); without offload FSDP2 still pins
7-103 MB of its own (one H200, torch 2.11) that no strategy holds.

Rows that cannot fail are left out: a figure that is 0 on both sides (no phase, no cost), B of `nnnS`
(0 by definition) and the delta of the baseline case itself. `reduce_scatter_ms` at world size 1 is not
compared: the suite's world-1 reduce-scatter is a device copy on the comm stream, the real systems' a
copy or an NCCL call that the profile may not show as a kernel; the section says so.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from . import tables
from .loading import Case, Run
from .pairing import PARAM_TRAFFIC, normalised, preset_key, suite_index
from .real import RealKey, parse_real_name

CORRECT = "correct"
PEAK_DELTA = "peak_device_delta_bytes"
PEAK_PINNED = "peak_pinned_bytes"
# The real runner's device peak in the bytes the tensors requested, before the caching allocator rounds
# each block (bench/real/shardaccum_real/measure.py); its delta is the note of a peak-delta row outside.
REQUESTED_PEAK = "peak_device_requested_bytes"
ACCUM_COST_B = "accum_cost_b_ms"
BYTES_FIGURES = ("d2h_bytes", "h2d_bytes")
PHASES = ("d2h_ms", "h2d_ms", "cpu_add_ms", "reduce_scatter_ms")
# The suite's counter for a real figure where the names differ: its only collective is the reduce-scatter.
SUITE_COUNTER = {"reduce_scatter_ms": "nccl_ms"}
TOLERANCE = {CORRECT: 0.0, "d2h_bytes": 0.0, "h2d_bytes": 0.0, PEAK_DELTA: 0.10, PEAK_PINNED: 0.10,
             ACCUM_COST_B: 0.20,
             **{p: 0.20 for p in PHASES}}
# At most this many timing or memory rows may fall outside their tolerance (issue 16), each with a cause.
ALLOWED_OUTSIDE = 2
VALIDATION_JSON = "validation.json"


@dataclass(frozen=True)
class Row:
    """One figure of one real case beside its preset case. `real` and `suite` in the figure's unit
    (bytes, ms, or 1/0 for `correct`); `tolerance` the allowed |suite − real| / |real| (0: equal)."""

    case: str
    preset_case: str
    figure: str
    real: float
    suite: float
    spread: float | None = None      # B rows: ms of step-to-step spread in the four steps it is made of
    real_gpu_b: float | None = None  # B rows: the real B on the GPU (gpu_busy_ms difference), ms
    real_requested: float | None = None  # peak-delta rows: the real delta in requested bytes (unrounded)

    @property
    def within_spread(self) -> bool:
        """Outside its tolerance, but by less than its measured spread (B rows only)."""
        if self.passes or self.spread is None:
            return False
        return abs(self.suite - self.real) <= self.tolerance * abs(self.real) + self.spread

    @property
    def within_gpu_b(self) -> bool:
        """A B row outside its tolerance and its spread, whose suite B is within the tolerance of the
        real B on the GPU: the rest of the real B is time the GPU waited for the host (B rows only)."""
        if self.passes or self.within_spread or self.real_gpu_b is None:
            return False
        return abs(self.suite - self.real_gpu_b) <= self.tolerance * abs(self.real_gpu_b)

    @property
    def within_requested(self) -> bool:
        """A peak-delta row outside its tolerance whose suite delta is within it of the real delta in the
        bytes the tensors requested: the rest is the caching allocator's rounding of blocks, which the
        suite's exact pool does not have (peak-delta rows only)."""
        if self.passes or self.real_requested is None:
            return False
        if self.real_requested == 0:
            return self.suite == 0
        return abs(self.suite - self.real_requested) <= self.tolerance * abs(self.real_requested)

    @property
    def tolerance(self) -> float:
        return TOLERANCE[self.figure]

    @property
    def exact(self) -> bool:
        """Verdicts and bytes must be equal; the others are timing or memory rows with a tolerance."""
        return self.tolerance == 0.0

    @property
    def deviation(self) -> float | None:
        """(suite − real) / |real|; None when the real figure is 0 (then only equality passes)."""
        return None if self.real == 0 else (self.suite - self.real) / abs(self.real)

    @property
    def passes(self) -> bool:
        if self.exact or self.real == 0:
            return self.suite == self.real
        return abs(self.suite - self.real) <= self.tolerance * abs(self.real)

    def as_json(self) -> dict:
        return {"case": self.case, "preset_case": self.preset_case, "figure": self.figure, "real": self.real,
                "suite": self.suite}


def _baseline(key: RealKey, offload: str) -> RealKey:
    return replace(key, schedule="n" * (key.k - 1) + "S", offload=offload)


def _difference(case: Case | None, base: Case | None, counter: str) -> float | None:
    """counter of `case` minus that of `base`; None when either case or value is absent. With step_ms
    it is B; with gpu_busy_ms (real runs) the B on the GPU."""
    if case is None or base is None:
        return None
    a, b = case.value(counter), base.value(counter)
    return None if a is None or b is None else a - b


def _half_range(case: Case | None) -> float | None:
    """Half of step_ms_max − step_ms_min of a case (ms); None when either is absent."""
    if case is None:
        return None
    lo, hi = case.value("step_ms_min"), case.value("step_ms_max")
    return None if lo is None or hi is None else (hi - lo) / 2


def _spread(*cases: Case | None) -> float | None:
    """The summed half-ranges of the steps a B is made of; None when any is unknown."""
    parts = [_half_range(c) for c in cases]
    return None if any(p is None for p in parts) else sum(parts)


def _param_shard_bytes(case: Case) -> float:
    """Σ P_u/N·b_g of a case with parameter traffic: its param_h2d_bytes / (2·K); 0 without."""
    moved = case.value("param_h2d_bytes") or 0.0
    return moved / (2 * case.key.k)


# Systems whose optimizer holds an fp32 master partition on the device unless it is offloaded (DeepSpeed).
OPTIMIZER_PARTITION_SYSTEMS = frozenset({"zero3", "zero2"})
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def _optimizer_partition_bytes(key: RealKey, suite_baseline: Case) -> float:
    """Σ P_u/N·4 bytes: the fp32 master partition that DeepSpeed's optimizer holds on the device in a case
    of `key` without offload (stage3.py 1172), from the suite baseline's `nccl_input_bytes` (its one sync of
    every unit reads Σ padded P_u·b_r); 0 with offload, for other systems, or when the counter is absent."""
    if key.system not in OPTIMIZER_PARTITION_SYSTEMS or key.offload != "none":
        return 0.0
    reduce = DTYPE_BYTES[key.dtype.split("-")[1]]
    return (suite_baseline.value("nccl_input_bytes") or 0.0) / (key.world * reduce) * 4


def rows_of(real: Run, suite: Run) -> tuple[list[Row], list[str]]:
    """The validation rows of every real case that has a preset case in `suite`, in report order, and a
    line per real case left out (no preset, or its preset case not in the suite run) saying why."""
    index = suite_index(suite)
    reals = {c.key: c for c in real.cases}
    rows: list[Row] = []
    left: list[str] = []

    def suite_case(key: RealKey) -> Case | None:
        skey, _ = preset_key(key, suite.registry)
        return index.get(normalised(skey)) if skey is not None else None

    for rc in sorted(real.cases, key=lambda c: c.key.sort_key):
        key = rc.key
        skey, why = preset_key(key, suite.registry)
        sc = index.get(normalised(skey)) if skey is not None else None
        if sc is None:
            left.append(f"{key.name}: {why or 'its preset case ' + skey.name + ' is not in the suite run'}")
            continue
        add = lambda figure, r, s, **extra: rows.append(  # noqa: E731
            Row(key.name, sc.key.name, figure, float(r), float(s), **extra))
        if rc.value(CORRECT) is not None and sc.value(CORRECT) is not None:
            add(CORRECT, rc.value(CORRECT), sc.value(CORRECT))
        for figure in BYTES_FIGURES:
            r, s = rc.value(figure), sc.value(figure)
            if r is not None and s is not None:
                add(figure, r, s)
        base_key = _baseline(key, "none")
        if key != base_key:
            rb, sb = reals.get(base_key), suite_case(base_key)
            r_peak, s_peak = rc.value("peak_device_bytes"), sc.value("peak_device_bytes")
            if None not in (rb, sb, r_peak, s_peak) and None not in (rb.value("peak_device_bytes"),
                                                                      sb.value("peak_device_bytes")):
                s_base = (sb.value("peak_device_bytes") + _param_shard_bytes(sc)
                          + _optimizer_partition_bytes(base_key, sb))
                s_peak += _optimizer_partition_bytes(key, sb)
                add(PEAK_DELTA, r_peak - rb.value("peak_device_bytes"), s_peak - s_base,
                    real_requested=_difference(rc, rb, REQUESTED_PEAK))
        r_pin, s_pin = rc.value(PEAK_PINNED), sc.value(PEAK_PINNED)
        if key.offload != "none" and None not in (r_pin, s_pin) and (r_pin or s_pin):
            add(PEAK_PINNED, r_pin, s_pin)
        with_params = dict(sc.key.extra).get(PARAM_TRAFFIC) == "on"
        for phase in PHASES:
            if phase == "reduce_scatter_ms" and key.world == 1:
                continue
            r, s = rc.value(phase), sc.value(SUITE_COUNTER.get(phase, phase))
            if phase == "h2d_ms" and with_params and r is not None:
                r += rc.value("param_h2d_ms") or 0.0
            if r is not None and s is not None and (r != 0 or s != 0):
                add(phase, r, s)
        b_key = _baseline(key, key.offload)
        if key != b_key:
            rb, sb = reals.get(b_key), suite_case(b_key)
            r, s = rc.value(ACCUM_COST_B), _difference(sc, sb, "step_ms")
            if r is not None and s is not None:
                add(ACCUM_COST_B, r, s, spread=_spread(rc, rb, sc, sb),
                    real_gpu_b=_difference(rc, rb, "gpu_busy_ms"))
    return rows, left


def write_json(rows: list[Row], path: Path) -> None:
    """The rows as a strict JSON list of {case, preset_case, figure, real, suite} (issue 16)."""
    path.write_text(json.dumps([r.as_json() for r in rows], indent=1, allow_nan=False) + "\n", encoding="utf-8")


def _fmt(row: Row, value: float) -> str:
    if row.figure == CORRECT:
        return "correct" if value == 1 else "WRONG"
    return tables.fmt_bytes(value) if row.figure.endswith("_bytes") else tables.fmt_ms(value)


def summary(rows: list[Row]) -> str:
    """One line: exact rows passed of all, timing/memory rows outside their tolerance against the allowed."""
    exact = [r for r in rows if r.exact]
    timed = [r for r in rows if not r.exact]
    outside = [r for r in timed if not r.passes]
    noisy = sum(r.within_spread for r in outside)
    host = sum(r.within_gpu_b for r in outside)
    rounded = sum(r.within_requested for r in outside)
    causes = ([f"{noisy} of them by less than their steps' measured spread"] if noisy else []) + (
        [f"{host} within tolerance of the real B on the GPU, the rest of the real B host time"] if host else []) + (
        [f"{rounded} within tolerance of the real delta in requested bytes, the rest the caching allocator's "
         "rounding"] if rounded else [])
    of_which = f" ({'; '.join(causes)})" if causes else ""
    return (f"verdicts and bytes: {sum(r.passes for r in exact)} of {len(exact)} equal (all must be); timing and "
            f"memory: {len(timed) - len(outside)} of {len(timed)} within tolerance, {len(outside)} outside{of_which} "
            f"(at most {ALLOWED_OUTSIDE} may be, each with a measured cause)")


def _note(row: Row) -> str:
    """What the section says beside a row outside its tolerance: a B row's spread and the real B on the GPU;
    a peak-delta row's real delta in requested bytes."""
    if row.passes:
        return ""
    if row.figure == PEAK_DELTA and row.real_requested is not None:
        return (f"real delta in requested bytes {tables.fmt_bytes(row.real_requested)}"
                + (" (the suite within tolerance of it)" if row.within_requested else ""))
    if row.figure != ACCUM_COST_B:
        return ""
    parts = []
    if row.spread is not None:
        parts.append(f"spread ±{row.spread:.1f} ms" + (" (within it)" if row.within_spread else ""))
    if row.real_gpu_b is not None:
        parts.append(f"real B on the GPU {row.real_gpu_b:.1f} ms" + (" (the suite within tolerance of it)"
                                                                    if row.within_gpu_b else ""))
    return "; ".join(parts)


def _cells(row: Row) -> list[str]:
    """figure, real, suite, deviation, tolerance: the cells every table of the section shows."""
    dev = tables.MISSING if row.deviation is None else f"{100 * row.deviation:+.1f}%"
    tol = "equal" if row.exact else f"±{100 * row.tolerance:.0f}%"
    return [row.figure, _fmt(row, row.real), _fmt(row, row.suite), dev, tol]


def _pair_labels(rows: list[Row]) -> dict[str, str]:
    """A short label per real case, e.g. 'zero3 · gpt2-xl · SSSS · offload cpu', so that the tables name a
    pair in a few words rather than by two names of 150 characters; world size, dtype and tokens are
    added only where two real cases would otherwise share a label. Escaped for a Markdown table cell."""
    keys = {r.case: parse_real_name(r.case) for r in rows}
    short = {c: f"{k.system} · {k.model} · {k.schedule} · offload {k.offload}" for c, k in keys.items()}
    clash = {v for v, n in Counter(short.values()).items() if n > 1}
    return {c: tables.escape(short[c] if short[c] not in clash else
                             f"{short[c]} · world {k.world} · {k.dtype}" + (f" · T={k.tokens}" if k.tokens else ""))
            for c, k in keys.items()}


def render_validation(real: Run, suite: Run | None, folder: Path) -> str:
    """The report's "Presets against the real systems" section; writes FOLDER/validation.json when a
    suite run of GPU times is given (a host run's times are not GPU time: no rows are made of them)."""
    out = ["## Presets against the real systems\n"]
    if suite is None:
        return "\n".join(out + ["No suite run given: nothing to validate.\n"])
    if suite.is_host or suite.backend != "cuda":
        return "\n".join(out + ["> [!WARNING]\n> **Not validated**: the suite run's times are not GPU times "
                                f"({tables.escape(suite.time_label)}); give a cuda-backend run.\n"])
    rows, left = rows_of(real, suite)
    write_json(rows, folder / VALIDATION_JSON)
    out.append("Issue 16's validation: each real case beside its preset case, figure by figure (the module "
               "docstring of `scripts/shardaccum_report/validation.py` defines them). Verdicts and gradient "
               "bytes must be equal; peak-device deltas and pinned peaks (offloaded cases) within 10%; phases and accumulation cost B within 20%. "
               f"The rows are in [`{VALIDATION_JSON}`]({VALIDATION_JSON}). `reduce_scatter_ms` is not compared "
               "at world size 1 (the suite's world-1 reduce-scatter is a device copy).\n")
    out.append(f"**{tables.escape(summary(rows))}.**\n")
    labels = _pair_labels(rows)
    outside = [r for r in rows if not r.exact and not r.passes]
    if outside:
        out.append(f"Outside their tolerance ({len(outside)}):\n")
        out.append(tables.md_table(["pair", "figure", "real", "suite", "deviation", "tolerance", "note"],
                                   [[labels[r.case], *_cells(r), _note(r)] for r in outside], right={2, 3, 4}))
    out.append("The pairs compared, one a real case (the figures below name them by their pair):\n")
    pairs = dict.fromkeys((r.case, r.preset_case) for r in rows)
    out.append(tables.md_table(["pair", "real case", "preset case"],
                               [[labels[c], f"`{tables.escape(c)}`", f"`{tables.escape(p)}`"] for c, p in pairs]))
    out.append("Every figure:\n")
    headers = ["pair", "figure", "real", "suite", "deviation", "tolerance", "result", "note"]
    table = [[labels[r.case], *_cells(r), "✓" if r.passes else "✗ **outside**", _note(r)] for r in rows]
    out.append(tables.md_table(headers, table, right={2, 3, 4}))
    if left:
        out.append(f"Real cases without a preset case here ({len(left)}):\n")
        out.extend(f"- {tables.escape(line)}" for line in left)
        out.append("")
    return "\n".join(out)
