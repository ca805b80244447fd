"""Baseline against candidate: per-case ratios, a Mann-Whitney U test over repetitions, regressions.

As Google Benchmark's tools/compare.py: the two-sided Mann-Whitney U test on the per-repetition values
of the metric (default step_ms, in ms), alpha 0.05, with at least 2 repetitions on each side. A case
regresses when its median is worse than the baseline's by more than the threshold (default 5%) and
the test does not call the difference noise; with too few repetitions for the test to reach alpha,
the ratio alone decides and the row says so. A case whose `correct` went from 1 to 0, or that newly
fails with an error, regresses whatever its time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from scipy.stats import mannwhitneyu

from . import tables
from .case import CaseKey, schedule_sort_key
from .counters import STEP, higher_is_better, unit_of
from .errors import InputError
from .loading import Case, Run, load_runs

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.05
MIN_REPETITIONS = 2


def smallest_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided exact p-value the U test can give with n1 and n2 samples and no ties:
    2 / C(n1 + n2, n1). Below alpha only from about 4 repetitions a side (2 vs 2: 0.333)."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


@dataclass
class CaseComparison:
    """One case in both runs. Values are medians over repetitions in the metric's unit."""

    key: CaseKey
    base: Case
    cand: Case
    base_value: float | None = None
    cand_value: float | None = None
    ratio: float | None = None        # candidate / baseline
    p_value: float | None = None
    test_note: str = ""
    verdict: str = "no data"          # regression, not significant, faster, unchanged, no data
    correctness: str | None = None    # why the case regressed in correctness, if it did
    correct_change: str = ""          # '1 → 0', '0 → 1' or ''

    @property
    def regressed(self) -> bool:
        return self.verdict == "regression" or self.correctness is not None


@dataclass
class Comparison:
    """All cases of two runs, matched by their name's axes."""

    base: Run
    cand: Run
    metric: str
    threshold: float
    alpha: float
    rows: list[CaseComparison] = field(default_factory=list)
    only_base: list[CaseKey] = field(default_factory=list)
    only_cand: list[CaseKey] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[CaseComparison]:
        return [r for r in self.rows if r.regressed]


def _worse_by(ratio: float, metric: str) -> float:
    """How much worse the candidate is, as a fraction (positive = worse, negative = better)."""
    if higher_is_better(metric):
        return 1.0 - ratio if math.isfinite(ratio) else -math.inf
    return ratio - 1.0


def compare_case(base: Case, cand: Case, metric: str, threshold: float, alpha: float) -> CaseComparison:
    """Compares one case of the two runs (see the module docstring for the rules)."""
    row = CaseComparison(base.key, base, cand)
    bc, cc = base.correct, cand.correct
    if bc is True and cc is False:
        row.correctness = "correct 1 → 0"
    elif base.error is None and cand.error is not None:
        row.correctness = f"fails in candidate: {cand.error}"
    row.correct_change = {(True, False): "1 → 0", (False, True): "0 → 1"}.get((bc, cc), "")

    row.base_value, row.cand_value = base.value(metric), cand.value(metric)
    if row.base_value is None or row.cand_value is None:
        side = "baseline" if row.base_value is None else "candidate"
        row.test_note = f"no {metric} in {side}" + (" (case failed)" if (base if side == "baseline" else cand).error
                                                     else "")
        return row
    if row.base_value == 0:
        row.ratio = 1.0 if row.cand_value == 0 else math.inf
    else:
        row.ratio = row.cand_value / row.base_value

    b, c = base.samples(metric), cand.samples(metric)
    decided_by_ratio = True
    if len(b) >= MIN_REPETITIONS and len(c) >= MIN_REPETITIONS:
        row.p_value = float(mannwhitneyu(b, c, alternative="two-sided").pvalue)
        floor = smallest_p_value(len(b), len(c))
        if floor < alpha:
            decided_by_ratio = False
            row.test_note = f"U test, {len(b)} vs {len(c)} repetitions"
        else:
            row.test_note = (f"{len(b)} vs {len(c)} repetitions: the U test cannot reach p < {alpha:g} "
                             f"(smallest p {floor:.3f}); ratio alone")
    else:
        row.test_note = (f"{len(b)} vs {len(c)} repetitions: no U test (needs ≥ {MIN_REPETITIONS} a side); "
                         "ratio alone")

    worse = _worse_by(row.ratio, metric)
    significant = decided_by_ratio or (row.p_value is not None and row.p_value < alpha)
    if worse > threshold:
        row.verdict = "regression" if significant else "not significant"
    elif worse < -threshold:
        row.verdict = "faster" if significant else "not significant"
    else:
        row.verdict = "unchanged"
    return row


def compare_runs(base: Run, cand: Run, metric: str = STEP, threshold: float = DEFAULT_THRESHOLD,
                 alpha: float = DEFAULT_ALPHA) -> Comparison:
    """Matches the runs' cases and compares each. Raises InputError when they have no case in common,
    or when no common case carries the metric (a misspelt --metric)."""
    if not threshold >= 0:
        raise InputError("", f"--threshold {threshold}: must be a fraction ≥ 0, e.g. 0.05 for 5%")
    if not 0 < alpha < 1:
        raise InputError("", f"--alpha {alpha}: must be between 0 and 1")
    result = Comparison(base, cand, metric, threshold, alpha)
    b, c = base.by_key(), cand.by_key()
    common = sorted(set(b) & set(c), key=lambda k: k.sort_key)
    result.only_base = sorted(set(b) - set(c), key=lambda k: k.sort_key)
    result.only_cand = sorted(set(c) - set(b), key=lambda k: k.sort_key)
    files = lambda run: ", ".join(f.path for f in run.files)  # noqa: E731
    if not common:
        raise InputError("", f"baseline ({files(base)}) and candidate ({files(cand)}) have no case in common "
                             "(cases match by model, world, schedule, binding, offload, mode and dtype)")
    if not any(b[k].has(metric) or c[k].has(metric) for k in common):
        available = sorted({m for k in common for r in b[k].ok_repetitions for m in r.counters})
        raise InputError("", f"--metric {metric}: no case carries it; counters in these runs: "
                             f"{', '.join(available) or 'none'} (or real_time, cpu_time)")
    result.rows = [compare_case(b[k], c[k], metric, threshold, alpha) for k in common]
    if base.backend != cand.backend:
        result.notes.append(f"The backends differ (baseline {base.backend}, candidate {cand.backend}): "
                            "their times are of different time domains.")
    elif base.is_host:
        result.notes.append("Both runs are on the host backend: times are host wall-clock, not GPU time.")
    return result


def compare_files(base_path: str | Path, cand_path: str | Path, metric: str = STEP,
                  threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA) -> Comparison:
    """Loads both files and compares them. Raises InputError (see loading.load_runs, compare_runs)."""
    return compare_runs(load_runs([base_path]), load_runs([cand_path]), metric, threshold, alpha)


def _fmt_value(v: float | None, metric: str) -> str:
    if v is None:
        return tables.MISSING
    unit = unit_of(metric)
    if unit == "bytes":
        return tables.fmt_bytes(v)
    if unit == "fraction":
        return tables.fmt_pct(v)
    return f"{v:.3f}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return tables.MISSING
    return "inf" if math.isinf(r) else f"{r:.3f}"


def _fmt_p(p: float | None) -> str:
    return tables.MISSING if p is None else f"{p:.3f}" if p >= 1e-3 else f"{p:.1e}"


def _case_cells(row: CaseComparison, with_group: bool) -> list[str]:
    k = row.key
    cells = [tables.escape(k.group.title)] if with_group else []
    return cells + [k.schedule, tables.escape(k.strategy.display)]


def summary_line(c: Comparison) -> str:
    """One line for a terminal: how many regressions, of how many cases."""
    slow = sum(1 for r in c.rows if r.verdict == "regression")
    wrong = sum(1 for r in c.rows if r.correctness is not None)
    if not c.regressions:
        return (f"no regression in {len(c.rows)} cases ({c.metric}, threshold {c.threshold:.0%}, "
                f"alpha {c.alpha:g})")
    n = len(c.regressions)
    return (f"{n} regression{'s' if n != 1 else ''} in {len(c.rows)} cases: {slow} worse by more than "
            f"{c.threshold:.0%} in {c.metric}, {wrong} lost correctness or now fail")


def to_markdown(c: Comparison) -> str:
    """The comparison as GitHub Markdown: the two runs, the regressions, all cases, notes."""
    unit = unit_of(c.metric)
    unit_text = f" ({unit})" if unit and unit != "fraction" else ""
    direction = "higher is better" if higher_is_better(c.metric) else "lower is better"
    out = [f"# shardaccum compare: {c.metric}\n"]
    info = []
    for label, key in (("machine", "machine"), ("backend", "backend"), ("time domain", "time_domain"),
                       ("model", "model"), ("world size", "world_size"), ("commit", "git_commit"), ("date", "date")):
        values = [run.files[0].context.get(key) for run in (c.base, c.cand)]
        if any(values):
            info.append([label] + [tables.escape(v or tables.MISSING) for v in values])
    out.append(tables.md_table(["", "baseline", "candidate"],
                               [["file"] + [f"`{tables.escape(run.files[0].path)}`" for run in (c.base, c.cand)]]
                               + info))
    if c.base.is_host or c.cand.is_host:
        out.append("> [!WARNING]\n> Host backend: times are host wall-clock, not GPU time.\n")
    out.append(f"Metric `{c.metric}`{unit_text}, {direction}: median over repetitions, ratio = candidate / "
               f"baseline. A case regresses when it is more than {c.threshold:.0%} worse and the two-sided "
               f"Mann-Whitney U test over repetitions gives p < {c.alpha:g} (with too few repetitions for the "
               "test to reach that, the ratio alone decides), or when `correct` went from 1 to 0, or when "
               "it now fails.\n")
    out.append(f"**{summary_line(c)}**\n")

    with_group = len({r.key.group for r in c.rows}) > 1
    lead = (["group"] if with_group else []) + ["schedule", "strategy"]
    test_notes = {r.test_note for r in c.rows}
    one_note = test_notes.pop() if len(test_notes) == 1 else None
    if one_note:
        out.append(f"Test, in every case: {tables.escape(one_note)}.\n")
    test_col = [] if one_note else ["test"]
    test_cell = (lambda r: []) if one_note else (lambda r: [tables.escape(r.test_note)])  # noqa: E731
    if c.regressions:
        out.append("## Regressions\n")
        rows = []
        for r in c.regressions:
            why = r.correctness or f"{_fmt_ratio(r.ratio)}× {'slower' if not higher_is_better(c.metric) else 'worse'}"
            rows.append(_case_cells(r, with_group) + [_fmt_value(r.base_value, c.metric),
                        _fmt_value(r.cand_value, c.metric), _fmt_ratio(r.ratio), _fmt_p(r.p_value),
                        tables.escape(why)] + test_cell(r))
        out.append(tables.md_table(lead + [f"baseline{unit_text}", f"candidate{unit_text}", "ratio", "p", "why"]
                                   + test_col, rows, right={len(lead), len(lead) + 1, len(lead) + 2,
                                                                 len(lead) + 3}))
    out.append("## All cases\n")
    rows = []
    for r in sorted(c.rows, key=lambda r: (r.key.group.sort_key, schedule_sort_key(r.key.schedule),
                                           r.key.strategy.sort_key)):
        verdict = f"**{r.verdict}**" if r.verdict == "regression" else r.verdict
        if r.correctness:
            verdict += f"; **{tables.escape(r.correctness)}**"
        rows.append(_case_cells(r, with_group) + [_fmt_value(r.base_value, c.metric),
                    _fmt_value(r.cand_value, c.metric), _fmt_ratio(r.ratio), _fmt_p(r.p_value), verdict,
                    r.correct_change or ""] + test_cell(r))
    out.append(tables.md_table(lead + [f"baseline{unit_text}", f"candidate{unit_text}", "ratio", "p", "verdict",
                                       "correct"] + test_col, rows,
                               right={len(lead), len(lead) + 1, len(lead) + 2, len(lead) + 3}))
    notes = list(c.notes)
    if c.only_base:
        notes.append(f"{len(c.only_base)} cases only in the baseline: "
                     + ", ".join(f"`{k.name}`" for k in c.only_base[:10]) + (" …" if len(c.only_base) > 10 else ""))
    if c.only_cand:
        notes.append(f"{len(c.only_cand)} cases only in the candidate: "
                     + ", ".join(f"`{k.name}`" for k in c.only_cand[:10]) + (" …" if len(c.only_cand) > 10 else ""))
    notes += c.base.notes + c.cand.notes
    if notes:
        out.append("## Notes\n")
        out.append("\n".join(f"- {n}" for n in notes) + "\n")
    return "\n".join(out)
