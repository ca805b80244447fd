"""Baseline against candidate: per-case ratios, a Mann-Whitney U test over repetitions, regressions.

As Google Benchmark's tools/compare.py: the two-sided Mann-Whitney U test on the per-repetition values
of the metric (default step_ms, in ms), alpha 0.05, with at least 2 repetitions on each side. A case
regresses when its median is worse than the baseline's by more than the threshold (default 5%) and
the test does not call the difference noise; with too few repetitions for the test to reach alpha,
the ratio alone decides and the row says so. A case whose `correct` went from 1 to 0, or that newly
fails with an error, regresses whatever its time.

The gate also fails on missing data (issue 11): a case of the baseline that the candidate lacks, or a
candidate case that ran (no error) without the metric or `correct` the baseline has (absent or null),
cannot be judged, so it is listed under "Missing in candidate" and fails like a regression. Cases only
in the candidate are listed as new and do not fail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import tables
from .case import CaseKey
from .counters import CORRECT, STEP, higher_is_better, unit_of
from .errors import InputError
from .loading import Case, Run, load_runs
from .real import RealKey

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
    missing: list[str] = field(default_factory=list)  # what the baseline has and the candidate lacks

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

    @property
    def missing_data(self) -> list[CaseComparison]:
        """Common cases whose candidate lacks the metric or `correct` that the baseline has."""
        return [r for r in self.rows if r.missing]

    @property
    def gate_failed(self) -> bool:
        """Whether compare.py exits 1: a regression, a case of the baseline missing, or missing data."""
        return bool(self.regressions or self.only_base or self.missing_data)


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
    if cand.error is None:  # a failed case lacks everything; that is the correctness verdict above
        if row.base_value is not None and row.cand_value is None:
            row.missing.append(metric)
        if bc is not None and cc is None and metric != CORRECT:
            row.missing.append(CORRECT)
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
        from scipy.stats import mannwhitneyu  # here, so that --help needs no scipy (deps.require)

        row.p_value = float(mannwhitneyu(b, c, alternative="two-sided").pvalue)
        floor = smallest_p_value(len(b), len(c))
        if floor < alpha:
            decided_by_ratio = False
            row.test_note = f"U test, {len(b)} vs {len(c)} repetitions"
        else:
            row.test_note = (f"{len(b)} vs {len(c)} repetitions: the U test cannot reach p < {alpha:g} "
                             f"(smallest p {floor:.3f}); ratio alone")
    else:
        if base.aggregates_only or cand.aggregates_only:
            sides = [side for side, x in (("baseline", base), ("candidate", cand)) if x.aggregates_only]
            row.test_note = (f"{' and '.join(sides)} aggregates only (--benchmark_report_aggregates_only): no "
                             "per-repetition values, no U test; ratio alone")
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


def _parts_that_differ(b: dict, c: dict) -> str:
    """When the two runs' cases would match but for their further name parts (`/param-traffic:on`,
    `/device-add-grid:torch`, ...), which parts those are, as a sentence to append; else ''."""
    bare = lambda keys: {replace(k, extra=()) for k in keys}  # noqa: E731
    if not bare(b) & bare(c):
        return ""
    parts = lambda keys: {f"{n}:{v}" for k in keys for n, v in k.extra}  # noqa: E731
    differ = sorted(parts(b) ^ parts(c))
    return ("; they would match but for the name parts " + ", ".join(f"/{p}" for p in differ) +
            ": this tool compares runs of one configuration (one --device-add-grid, --param-traffic, ...), "
            "report.py draws several beside each other")


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
    if not common and base.kind != cand.kind:
        raise InputError("", f"baseline ({files(base)}) is a {_KIND[base.kind]} and candidate ({files(cand)}) a "
                             f"{_KIND[cand.kind]}: no case in common; compare a real run with a real run and a "
                             "suite run with a suite run (report.py puts real cases beside their presets)")
    if not common:
        raise InputError("", f"baseline ({files(base)}) and candidate ({files(cand)}) have no case in common "
                             "(cases match by model, world, schedule, binding, offload, mode, division, dtype "
                             f"and every further name part){_parts_that_differ(b, c)}")
    if not any(b[k].has(metric) or c[k].has(metric) for k in common):
        available = sorted({m for k in common for r in b[k].ok_repetitions for m in r.counters})
        raise InputError("", f"--metric {metric}: no case carries it; counters in these runs: "
                             f"{', '.join(available) or 'none'} (or real_time, cpu_time)")
    result.rows = [compare_case(b[k], c[k], metric, threshold, alpha) for k in common]
    # A name leaves out a defaulted lookahead, device add grid, comm priority, host time per unit and CPU add
    # threads, which follow the preset a strategy is and the run's flags (bench/cli.cpp): one name may have run
    # two ways.
    settings = ((k, b[k].unnamed_settings, c[k].unnamed_settings) for k in common)
    moved = [(k, bs, cs) for k, bs, cs in settings if bs and cs and bs != cs]
    if moved:
        def change(bs: str, cs: str) -> str:  # only the settings that differ, each as 'before → after'
            b_parts, c_parts = bs.split("; "), cs.split("; ")
            gone = [p for p in b_parts if p not in c_parts]
            new = [p for p in c_parts if p not in b_parts]
            return ("; ".join(gone) or "(not said)") + " → " + ("; ".join(new) or "(not said)")

        shown = "; ".join(f"`{k.name}`: {change(bs, cs)}" for k, bs, cs in moved[:3])
        result.notes.append(f"{len(moved)} case{'s' if len(moved) != 1 else ''} ran under settings their name "
                            f"does not carry that differ between the runs ({shown}{' …' if len(moved) > 3 else ''}): "
                            "a strategy's lookahead, device add grid, comm priority, host time per unit "
                            "and CPU add threads follow the preset it is and the run's --lookahead, "
                            "--device-add-grid, --comm-priority, --hook-host-us and --host-threads, so the presets "
                            "or those flags differ between these runs; their times are not of one configuration "
                            "(give both runs the same five flags to pin them)")
    if base.backend != cand.backend:
        result.notes.append(f"The backends differ (baseline {base.backend}, candidate {cand.backend}): "
                            "their times are of different time domains.")
    elif base.is_host:
        result.notes.append("Both runs are on the host backend: times are host wall-clock, not GPU time.")
    return result


_KIND = {"real": "real-system run (bench/real/run.py, cases real/...)",
         "suite": "suite run (shardaccum_bench, cases accum/...)"}


def _what(k: CaseKey | RealKey) -> str:
    """The case's column beside its schedule: the strategy, or a real case's system and offload."""
    return k.display if isinstance(k, RealKey) else k.strategy.display


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
    return cells + [k.schedule, tables.escape(_what(k))]


def _missing_text(c: Comparison) -> str:
    """'missing in candidate: 1 case of the baseline, 2 cases without step_ms or correct', or ''."""
    parts = []
    if c.only_base:
        parts.append(f"{len(c.only_base)} case{'s' if len(c.only_base) != 1 else ''} of the baseline")
    if c.missing_data:
        what = " or ".join(dict.fromkeys(m for r in c.missing_data for m in r.missing))
        parts.append(f"{len(c.missing_data)} case{'s' if len(c.missing_data) != 1 else ''} without {what}")
    return f"missing in candidate: {', '.join(parts)}" if parts else ""


def _cases(n: int) -> str:
    """'1 case', '64 cases'."""
    return f"{n} case{'' if n == 1 else 's'}"


def summary_line(c: Comparison) -> str:
    """One line for a terminal: how many regressions, of how many cases, and what the candidate lacks."""
    slow = sum(1 for r in c.rows if r.verdict == "regression")
    wrong = sum(1 for r in c.rows if r.correctness is not None)
    missing = _missing_text(c)
    if not c.regressions:
        if missing:
            judged = len(c.rows) - len(c.missing_data)
            return f"{missing} (the gate fails: a case without data cannot be judged); no regression in {_cases(judged)}"
        return (f"no regression in {_cases(len(c.rows))} ({c.metric}, threshold {c.threshold:.0%}, "
                f"alpha {c.alpha:g})")
    n = len(c.regressions)
    return (f"{n} regression{'s' if n != 1 else ''} in {_cases(len(c.rows))}: {slow} worse by more than "
            f"{c.threshold:.0%} in {c.metric}, {wrong} lost correctness or now fail"
            + (f"; {missing}" if missing else ""))


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
    lead = (["group"] if with_group else []) + ["schedule", "system" if c.base.kind == "real" else "strategy"]
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
    out.append(_missing_section(c, with_group, lead))
    out.append("## All cases\n")
    rows = []
    for r in sorted(c.rows, key=lambda r: r.key.sort_key):  # group, schedule, strategy (or system, offload)
        verdict = f"**{r.verdict}**" if r.verdict == "regression" else r.verdict
        if r.correctness:
            verdict += f"; **{tables.escape(r.correctness)}**"
        if r.missing:
            verdict += f"; **missing in candidate: {', '.join(r.missing)}**"
        rows.append(_case_cells(r, with_group) + [_fmt_value(r.base_value, c.metric),
                    _fmt_value(r.cand_value, c.metric), _fmt_ratio(r.ratio), _fmt_p(r.p_value), verdict,
                    r.correct_change or ""] + test_cell(r))
    out.append(tables.md_table(lead + [f"baseline{unit_text}", f"candidate{unit_text}", "ratio", "p", "verdict",
                                       "correct"] + test_col, rows,
                               right={len(lead), len(lead) + 1, len(lead) + 2, len(lead) + 3}))
    if c.only_cand:
        out.append("## New in candidate\n")
        out.append(f"{len(c.only_cand)} case{'s' if len(c.only_cand) != 1 else ''} only in the candidate (listed, "
                   "not judged; they do not fail the gate):\n")
        out.append("\n".join(f"- `{tables.escape(k.name)}`" for k in c.only_cand) + "\n")
    notes = list(c.notes)
    both = [r for r in c.rows if r.base.error is not None and r.cand.error is not None]
    if both:
        notes.append(f"{len(both)} case{'s' if len(both) != 1 else ''} failed in both runs (no data to compare): "
                     + ", ".join(f"`{r.key.name}`" for r in both[:10]) + (" …" if len(both) > 10 else ""))
    notes += c.base.notes + c.cand.notes
    if notes:
        out.append("## Notes\n")
        out.append("\n".join(f"- {n}" for n in notes) + "\n")
    return "\n".join(out)


def _missing_section(c: Comparison, with_group: bool, lead: list[str]) -> str:
    """'## Missing in candidate': every case of the baseline the candidate lacks, every datum it lacks."""
    if not (c.only_base or c.missing_data):
        return ""
    out = ["## Missing in candidate\n",
           f"**{_missing_text(c)}.** A case without data cannot be judged, so each fails the gate (exit 1).\n"]
    rows = [_case_cells(r, with_group) + [", ".join(f"`{m}`" for m in r.missing)] for r in c.missing_data]
    for k in c.only_base:
        rows.append(([tables.escape(k.group.title)] if with_group else [])
                    + [k.schedule, tables.escape(_what(k)), "the whole case"])
    out.append(tables.md_table(lead + ["missing"], rows))
    if c.only_base:
        out.append("Cases of the baseline not in the candidate: "
                   + ", ".join(f"`{tables.escape(k.name)}`" for k in c.only_base) + "\n")
    return "\n".join(out)
