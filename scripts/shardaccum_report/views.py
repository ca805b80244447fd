"""README sections that answer the question directly: the fastest correct strategy within a memory
budget, each strategy's accumulation cost, and the PCIe diagnosis (text beside report.py's plots)."""

from __future__ import annotations

from pathlib import Path

from . import analysis, tables
from .budget import GB, Budget, choose
from .case import Group, registry_of
from .counters import PEAK_DEVICE, PEAK_PINNED, STEP
from .loading import Case
from .plots import plot_accum_cost
from .spread import STEP_MAX, STEP_MIN, accumulation_costs, step_spread


def fmt_range(case: Case) -> str:
    """'12.345 (12.001–13.210)' with the spread, or the median alone when the JSON shows none."""
    spread = step_spread(case)
    text = tables.fmt_ms(case.value(STEP))
    return text if spread is None else f"{text} ({spread.low:.3f}–{spread.high:.3f})"


def budget_section(groups: dict[Group, list[Case]], budget: Budget) -> str:
    """The table of report.py --device-gb/--pinned-gb: per group and schedule, the fastest correct case
    whose peaks per rank fit, the cases tied with it, and how many correct cases fit."""
    out = [f"## Fastest correct strategy within {budget.device_gb:g} GB of device and {budget.pinned_gb:g} GB "
           "of pinned memory\n",
           f"Per rank: peak device memory ≤ {budget.device_gb:g} GB and peak pinned host memory ≤ "
           f"{budget.pinned_gb:g} GB (GB = 10⁹ bytes; set them with `report.py --device-gb X --pinned-gb Y`). "
           "Step in ms, the median with the spread over steps and repetitions in brackets; a case whose "
           "spread overlaps the pick's is a **tie**: no ranking between them is claimed.\n"]
    rows = []
    for group, cases in groups.items():
        for schedule, sc in analysis.by_schedule(cases).items():
            ch = choose(sc, budget)
            shown = registry_of(sc).schedule_display(schedule)
            lead = [tables.escape(group.title)] if len(groups) > 1 else []
            if ch.pick is None:
                need = (f"none fits; the leanest correct, {tables.escape(ch.leanest.key.strategy.display)}, needs "
                        f"{ch.leanest.value(PEAK_DEVICE.counter) / GB:.3g} GB device and "
                        f"{ch.leanest.value(PEAK_PINNED.counter) / GB:.3g} GB pinned") if ch.leanest else "no correct case"
                rows.append(lead + [shown, need, tables.MISSING, tables.MISSING, tables.MISSING, "",
                                    f"0 of {ch.correct}"])
                continue
            ties = ", ".join(tables.escape(c.key.strategy.display) for c in ch.ties) or (
                "none" if step_spread(ch.pick) is not None else "unknown: the JSON shows no spread of it")
            rows.append(lead + [shown, tables.escape(ch.pick.key.strategy.display), fmt_range(ch.pick),
                                tables.fmt_bytes(ch.pick.value(PEAK_DEVICE.counter)),
                                tables.fmt_bytes(ch.pick.value(PEAK_PINNED.counter)), ties,
                                f"{ch.fitting} of {ch.correct}"])
    headers = (["group"] if len(groups) > 1 else []) + [
        "schedule", "fastest correct that fits", "step (ms)", "peak device (B)", "peak pinned (B)",
        "tied with it (spreads overlap)", "correct cases that fit"]
    numeric = {headers.index(h) for h in ("step (ms)", "peak device (B)", "peak pinned (B)")}
    out.append(tables.md_table(headers, rows, right=numeric))
    return "\n".join(out)


def accum_cost_part(cases: list[Case], folder: Path, slug: str, title: str, time_label: str) -> str:
    """The accumulation-cost plot of a group, its definition and its table."""
    png = plot_accum_cost(cases, folder / f"{slug}.accum_cost.png", title, time_label)
    k = max((c.key.k for c in cases), default=1)
    base = "n" * (k - 1) + "S"
    if png is None:
        return (f"Skipped: no case has its baseline in this run (the same binding and mode with offload none on "
                f"{base}).\n")
    costs = accumulation_costs(cases)
    rows = []
    for c in sorted(cases, key=lambda c: c.key.sort_key):
        v = costs.get(c.key)
        if v is None:
            cost, rng, verdict = tables.MISSING, tables.MISSING, "no baseline" if c.error is None else "error"
        elif v.is_baseline:
            cost, rng, verdict = "0", "", "baseline"
        else:
            cost = f"{v.cost_ms:+.3f}"
            rng = "" if v.low is None else f"{v.low:+.3f} … {v.high:+.3f}"
            verdict = "**tie** (range holds 0)" if v.tie else ""
        rows.append([c.key.schedule, tables.escape(c.key.strategy.display), tables.fmt_ms(c.value(STEP)), cost, rng,
                     verdict, tables.result_cell(c)])
    table = tables.md_table(["schedule", "strategy", "step (ms)", "cost (ms)", "range (ms)", "", "result"], rows,
                            right={2, 3, 4})
    spread_known = any(step_spread(c) is not None for c in cases)
    spread_note = ("The whisker is the range the spreads over steps and repetitions allow (`step_ms_min`/"
                   f"`step_ms_max` and the repetitions' `step_ms`); a cost whose range holds 0 is drawn as a "
                   "**tie**: it is not told apart from no cost." if spread_known else
                   f"The JSON shows no spread (one repetition and no `{STEP_MIN}`/`{STEP_MAX}`): the costs are "
                   "differences of single figures and ties cannot be drawn.")
    img = f"![Accumulation cost per strategy, {time_label}]({png.name})\n"
    text = (f"Cost = `step_ms` − `step_ms` of the same binding and mode with offload none on {base}, in the same "
            "group: bench/real/run.py's cost A (docs/DESIGN.md §9), here for every suite strategy. "
            f"{spread_note}\n")
    return "\n".join([img, text, f"<details><summary>Table: accumulation cost (ms)</summary>\n\n{table}\n</details>\n"])


def diagnosis_sentence(notes: dict) -> str:
    """The PCIe diagnosis as a sentence listing each case it applies to."""
    if not notes:
        return ""
    listed = "; ".join(f"{k.schedule} {k.strategy.display}: {text}" for (k, _), text in sorted(
        notes.items(), key=lambda kv: kv[0][0].sort_key))
    return ("**Diagnosis** (drawn beside the bars): a WRONG offloaded case that moves none of the bytes the same "
            "strategy with another mode moves into the add never brought the saved shard back: "
            f"{tables.escape(listed)}.\n")


def mismatch_sentence(cases: list[Case], pairs) -> str:
    """The sentence under a measured-beside-predicted plot: all match, or which differ and by how much."""
    bad = [(c, p) for c in cases for p in pairs if analysis.mismatched(c, p)]
    compared = [(c, p) for c in cases for p in pairs if analysis.deviation(c, p) is not None]
    if not compared:
        return ""
    if not bad:
        return (f"Measured matches predicted within {analysis.MISMATCH_TOLERANCE:.0%} in all {len(compared)} "
                "comparisons.\n")
    listed = "; ".join(f"{c.key.schedule} {c.key.strategy.display} {p.counter} "
                       f"{tables.fmt_deviation(analysis.deviation(c, p))}" for c, p in bad[:8])
    more = f" and {len(bad) - 8} more" if len(bad) > 8 else ""
    return (f"**Measured differs from predicted by more than {analysis.MISMATCH_TOLERANCE:.0%} in {len(bad)} of "
            f"{len(compared)} comparisons**: {tables.escape(listed)}{more}.\n")
