"""Markdown tables of cases (GitHub-flavoured). Times in ms, bytes as exact integers, fractions in %.

Every function returns Markdown text; a missing value is shown as '–'.
"""

from __future__ import annotations

import math

from . import analysis
from .analysis import ParetoPoint, ScalingFigure
from .case import registry_of
from .counters import CEILING_FRACTIONS, CEILING_KEYS, OTHER, PEAK_PINNED, PHASES, STEP, Paired
from .loading import Case

MISSING = "–"


def escape(text: object) -> str:
    """Text safe inside a table cell: pipes escaped, line breaks flattened."""
    return " ".join(str(text).split()).replace("|", "\\|")


def md_table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    """A Markdown table; columns whose index is in `right` are right-aligned (numbers)."""
    right = right or set()
    line = lambda cells: "| " + " | ".join(cells) + " |"  # noqa: E731
    rule = ["---:" if i in right else "---" for i in range(len(headers))]
    return "\n".join([line(headers), line(rule)] + [line(r) for r in rows]) + "\n"


def fmt_ms(v: float | None) -> str:
    """Milliseconds with 3 decimals, e.g. '12.345'."""
    return MISSING if v is None else f"{v:.3f}"


def fmt_bytes(v: float | None) -> str:
    """Exact bytes with thousands separators, e.g. '67,108,864'."""
    return MISSING if v is None else f"{round(v):,}"


def fmt_gbps(v: float | None) -> str:
    return MISSING if v is None else f"{v:.1f}"


def fmt_pct(v: float | None) -> str:
    """A fraction 0..1 as a percentage, e.g. 0.712 -> '71.2%'."""
    return MISSING if v is None else f"{100 * v:.1f}%"


def fmt_err(v: float | None) -> str:
    """A relative error: '0', '0.866', '1.2e-07', 'NaN', 'inf'."""
    if v is None:
        return MISSING
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "inf"
    if v == 0:
        return "0"
    return f"{v:.3f}" if abs(v) >= 1e-3 else f"{v:.1e}"


def fmt_deviation(d: float | None) -> str:
    """measured/predicted − 1 as '=', '+1.2%' or '−3.0%' (bold beyond the tolerance)."""
    if d is None:
        return MISSING
    if d == 0:
        return "="
    text = "+inf" if math.isinf(d) else f"{100 * d:+.1f}%"
    return f"**{text}**" if abs(d) > analysis.MISMATCH_TOLERANCE else text


RESULT = {"correct": "✓ correct", "wrong": "✗ **WRONG**", "error": "⚠ error", "unknown": "? no oracle"}


def result_cell(case: Case) -> str:
    return RESULT[case.status]


def _present(cases: list[Case], counter: str) -> bool:
    return any(c.value(counter) is not None for c in cases)


def phase_table(cases: list[Case]) -> str:
    """Step time and its phases (ms, median over repetitions), the result and max_rel_err per case."""
    phases = [p for p in PHASES if _present(cases, p.counter)]
    headers = ["schedule", "strategy", "step (ms)"] + [f"{p.label} (ms)" for p in phases] + [
        "other (ms)", "reps", "result", "max_rel_err"]
    rows = []
    for c in cases:
        b = analysis.phase_breakdown(c)
        rows.append([c.key.schedule, escape(c.key.strategy.display), fmt_ms(c.value(STEP))]
                    + [fmt_ms(b[p.counter]) for p in phases]
                    + [fmt_ms(b[OTHER.counter]), str(c.repetition_count), result_cell(c), fmt_err(c.max_rel_err)])
    return md_table(headers, rows, right=set(range(2, len(headers) - 2)))


OVERLAP_COUNTERS = ("compute_ms", "nccl_ms", "exposed_comm_ms", "overlap_fraction")


def overlap_table(cases: list[Case]) -> str | None:
    """The step against its backward and reduce-scatter (ms, median over repetitions): compute_ms (the
    backward as the GPU ran it), nccl_ms, their sum, exposed_comm_ms (reduce-scatter time no backward
    hid) and overlap_fraction (1 − exposed / nccl; docs/DESIGN.md §6). None when no case has them."""
    if not any(c.value("exposed_comm_ms") is not None for c in cases):
        return None
    headers = ["schedule", "strategy", "step (ms)", "backward (ms)", "reduce-scatter (ms)",
               "backward + RS (ms)", "exposed RS (ms)", "RS hidden"]
    rows = []
    for c in cases:
        bw, rs = c.value("compute_ms"), c.value("nccl_ms")
        frac = c.value("overlap_fraction")
        rows.append([c.key.schedule, escape(c.key.strategy.display), fmt_ms(c.value(STEP)), fmt_ms(bw),
                     fmt_ms(rs), fmt_ms(bw + rs) if bw is not None and rs is not None else "–",
                     fmt_ms(c.value("exposed_comm_ms")), f"{100 * frac:.1f}%" if frac is not None else "–"])
    return md_table(headers, rows, right=set(range(2, len(headers))))


def paired_table(cases: list[Case], pairs: tuple[Paired, ...]) -> str:
    """Measured beside predicted (bytes per step and rank) for each pair, with the deviation."""
    headers = ["schedule", "strategy"]
    for p in pairs:
        headers += [f"{p.label} measured (B)", "predicted (B)", "Δ"]
    rows = []
    for c in cases:
        row = [c.key.schedule, escape(c.key.strategy.display)]
        for p in pairs:
            row += [fmt_bytes(c.value(p.counter)), fmt_bytes(c.value(p.model)),
                    fmt_deviation(analysis.deviation(c, p))]
        rows.append(row)
    return md_table(headers, rows, right=set(range(2, len(headers))))


def correctness_table(cases: list[Case]) -> str:
    """Strategies × schedules: ✓/✗/⚠ and max_rel_err of each case."""
    schedules = list(analysis.by_schedule(cases))
    strategies = analysis.strategies_of(cases)
    cell = {(c.key.strategy, c.key.schedule): c for c in cases}
    rows = []
    for s in strategies:
        row = [escape(s.display)]
        for sched in schedules:
            c = cell.get((s, sched))
            if c is None:
                row.append(MISSING)
            elif c.status == "error":
                row.append("⚠ error")
            else:
                mark = {"correct": "✓", "wrong": "✗ **WRONG**", "unknown": "?"}[c.status]
                row.append(f"{mark} {fmt_err(c.max_rel_err)}")
        rows.append(row)
    return md_table(["strategy"] + [registry_of(cases).schedule_display(s) for s in schedules], rows)


def ceilings_table(ceilings: dict[str, float]) -> str:
    """The ceilings measured in the run (GB/s)."""
    rows = [[f"`{k}`", CEILING_KEYS[k], fmt_gbps(v)] for k, v in ceilings.items()]
    return md_table(["ceiling", "what it measures", "GB/s"], rows, right={2})


def fraction_table(cases: list[Case]) -> str:
    """Each phase's bandwidth as a percentage of its measured ceiling."""
    fracs = [f for f in CEILING_FRACTIONS if _present(cases, f.counter)]
    headers = ["schedule", "strategy"] + [f"{f.label} (% of ceiling)" for f in fracs]
    rows = [[c.key.schedule, escape(c.key.strategy.display)] + [fmt_pct(c.value(f.counter)) for f in fracs]
            for c in cases]
    return md_table(headers, rows, right=set(range(2, len(headers))))


def pareto_table(fronts: dict[str, list[ParetoPoint]]) -> str:
    """Per schedule, the strategy to pick for a device-memory budget: the front from least memory up."""
    rows = []
    for schedule, front in fronts.items():
        for p in front:
            rows.append([schedule, fmt_bytes(p.memory_bytes), f"{p.memory_bytes / 2**20:,.1f}",
                         escape(p.case.key.strategy.display), fmt_ms(p.step_ms),
                         fmt_bytes(p.case.value(PEAK_PINNED.counter))])
    return md_table(["schedule", "budget ≥ peak device (B)", "(MiB)", "pick", "step (ms)", "peak pinned (B)"],
                    rows, right={1, 2, 4, 5})


def errors_table(cases: list[Case]) -> str:
    """Cases that ended with an error, and the message."""
    rows = [[c.key.schedule, escape(c.key.strategy.display), f"`{escape(c.error).replace('`', '')}`"]
            for c in cases if c.error is not None]
    return md_table(["schedule", "strategy", "error"], rows)


def scaling_table(fig: ScalingFigure) -> str:
    """Step time (ms) of each strategy at each K or world size."""
    axis = "K" if fig.axis == "k" else "world"
    headers = ["schedule", "strategy"] + [f"{axis}={x} (ms)" for x in fig.xs]
    rows = []
    for panel, series in fig.panels.items():
        for strategy in sorted(series, key=lambda s: s.sort_key):
            at = {p.x: p for p in series[strategy]}
            cells = []
            for x in fig.xs:
                p = at.get(x)
                cells.append(MISSING if p is None else fmt_ms(p.step_ms) + (" ✗" if p.status == "wrong" else ""))
            rows.append([panel, escape(strategy.display)] + cells)
    return md_table(headers, rows, right=set(range(2, len(headers))))

