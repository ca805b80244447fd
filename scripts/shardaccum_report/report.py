"""Assembles reports/NAME/README.md and its PNG plots from one or more benchmark JSON files.

The README is plain GitHub Markdown: relative image links, Markdown tables, long tables folded in
<details>. Every value is per optimizer step and per rank, times in ms (median over repetitions),
bytes exact, bandwidths in GB/s.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from . import analysis, tables, views
from .atomic import FolderNotMade, atomic_directory, carried_over
from .budget import DEFAULT_DEVICE_GB, DEFAULT_PINNED_GB, Budget
from .case import Group, Strategy, registry_of
from .counters import CEILING_FRACTIONS, MEMORY_PAIRS, NCCL_INPUT, PEAK_DEVICE, PHASES, STEP, TRAFFIC_PAIRS
from .errors import InputError
from .identity import why_not_drawn
from .loading import Case, Run, RunFile, load_inputs
from .overwrite import refuse_folder_over_inputs
from .plots import (
    TimelinePanel,
    TimelineRow,
    plot_bound_ratio,
    plot_ceilings,
    plot_correctness,
    plot_measured_predicted,
    plot_pareto,
    plot_scaling,
    plot_step_phases,
    plot_timeline,
)
from .plots.timeline import MIN_WIDTH, ROWS_PER_FIGURE, drawn_step, on_gpu_time
from .real_section import real_inputs, render_real_only, render_section
from .validation import render_validation
from .trace import StepTimeline, TraceSet, load_trace

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
TRACE_NAME = "trace.json"  # looked for beside a single input (scripts/run.sh writes reports/NAME/trace.json)


def check_name(name: str) -> str:
    """Returns `name` when it is one safe path component; raises InputError otherwise."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise InputError("", f"--name {name!r}: use letters, digits, '.', '_' and '-' (one folder name, "
                             "starting with a letter or digit), e.g. h200x2-llama2-7b")
    return name


def find_trace(paths: list[str | Path]) -> Path | None:
    """The trace.json beside the one input file, or None (none there, or several inputs)."""
    if len(paths) != 1:
        return None
    candidate = Path(paths[0]).parent / TRACE_NAME
    return candidate if candidate.is_file() else None


def build_report(paths: list[str | Path], name: str, out_dir: str | Path = "reports",
                 traces: list[str | Path] | None = None, budget: Budget | None = None) -> Path:
    """Reads the files, writes OUT_DIR/NAME/README.md with its PNGs, and returns the README's path.

    `traces` are Perfetto/Chrome traces of shardaccum_bench --trace whose steps are drawn as
    timelines; when none is given, a trace.json beside a single input file is used if there is one.
    Runs of bench/real/run.py (real/... cases) may be among the inputs, beside their presets (real_section.py).
    A trace is drawn only when its run_id is an input's (identity.py); one that is not is named, with
    the reason, in the report and on stderr. `budget` sets the fastest-within-memory table (default:
    budget.DEFAULT_DEVICE_GB and DEFAULT_PINNED_GB).
    The folder is written complete in a temporary beside it and then renamed into place, replacing
    an older report of the same name. Raises InputError for a bad name, input file or trace (see
    loading.load_inputs, trace.load_trace) and OSError when the output cannot be written.
    """
    check_name(name)
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InputError("", f"--out-dir {out_dir}: not a folder; give the folder the report goes into "
                             "(it is made when missing)")
    target = Path(out_dir) / name
    inputs = list(paths) + list(traces or [])
    refuse_folder_over_inputs(target, carried_over, inputs, "--name/--out-dir")
    run, real = load_inputs(paths)
    for why in stale_namesakes(target, inputs):
        print(f"report.py: warning: {why}", file=sys.stderr)
    if run is None:
        if traces:
            raise InputError(traces[0], "a trace is drawn beside its suite run's cases; the inputs hold real-system "
                                        "runs only (give the shardaccum_bench run JSON too)")
        with _report_folder(target) as tmp:
            (tmp / "README.md").write_text(render_real_only(real, name, tmp), encoding="utf-8")
        return target / "README.md"
    found = None if traces or real else find_trace(paths)
    drawn, refused = [], []
    for trace in [load_trace(t, run.registry) for t in (traces or ([found] if found else []))]:
        why = why_not_drawn(trace, run)
        if why is None:
            drawn.append(trace)
        else:
            refused.append(why)
    for why in refused:
        print(f"report.py: warning: {why}", file=sys.stderr)
    trace_set = TraceSet(drawn, found is not None, refused=refused)
    with _report_folder(target) as tmp:
        (tmp / "README.md").write_text(render(run, name, tmp, trace_set, target, real, budget), encoding="utf-8")
    return target / "README.md"


@contextmanager
def _report_folder(target: Path) -> Iterator[Path]:
    """atomic_directory(target), whose failure to begin (once the inputs and traces are read, before any
    plot) is an InputError naming --out-dir/--name and the folder, not the temporary beside it."""
    with ExitStack() as stack:
        try:
            tmp = stack.enter_context(atomic_directory(target))
        except FolderNotMade as e:
            raise InputError("--out-dir/--name", f"cannot make the report folder {target}: {e.strerror}; give an "
                                                 "--out-dir this user can write and a --name of at most 200 "
                                                 "characters") from None
        yield tmp


def stale_namesakes(target: Path, inputs: list[str | Path]) -> list[str]:
    """The files the folder keeps from its previous report (atomic.py carried_over) that bear an input's
    name without being that input, e.g. reports/NAME/run.json of an older run when the report is made
    from reports/.NAME.partial.PID/reports/NAME/run.json: each said in words, since the new README
    describes the input and the folder would hold another file under its name."""
    out = []
    for given in inputs:
        kept = Path(target) / Path(given).name
        try:
            same = kept.resolve() == Path(given).resolve() or not kept.is_file()
        except OSError:
            same = True
        if not same and carried_over(kept.name):
            out.append(f"{kept} stays from the folder's previous report, and this report is of {given}, "
                       f"not of it: copy {given} over it, or remove it")
    return out


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n</details>\n"


def _image(alt: str, path: Path | None) -> str:
    return f"![{alt}]({path.name})\n" if path is not None else ""


def _file_for(run: Run, case: Case) -> RunFile:
    return next(f for f in run.files if f.path == case.source)


def render(run: Run, name: str, folder: Path, traces: TraceSet | None = None, target: Path | None = None,
           real: Run | None = None, budget: Budget | None = None) -> str:
    """The README text; writes the PNGs into `folder` as a side effect. `target` is where the folder
    will end up (to link a trace inside it relatively); `real`, the real-system runs put beside the presets."""
    traces = traces if traces is not None else TraceSet()
    target = target if target is not None else folder
    time_label = run.time_label
    out: list[str] = [f"# shardaccum report: {name}\n"]
    out.append(_banner(run))
    out.append(_run_info(run))
    if real is not None:
        out.append(real_inputs(real))
    groups = run.groups()
    out.append(_summary(run, groups))
    out.append(views.budget_section(groups, budget or Budget(DEFAULT_DEVICE_GB, DEFAULT_PINNED_GB)))
    for group, cases in groups.items():
        out.append(_group_section(run, group, cases, folder, time_label, traces, target))
    out.append(_trace_only_sections(run, folder, traces, target))
    out.append(_scaling_section(run, folder, time_label))
    if real is not None:
        out.append(render_section(real, run, folder))
        out.append(render_validation(real, run, folder))
    out.append(_notes(run, name, traces, real))
    return "\n".join(part for part in out if part)


def _banner(run: Run) -> str:
    if run.is_host:
        return ("> [!WARNING]\n"
                "> **Host backend: every time in this report is host wall-clock, not GPU time.** Ranks are "
                "threads on the CPU and memory spaces are host arenas; bytes and correctness carry over to "
                "GPUs, times do not.\n")
    if run.backend is None:
        return "> [!NOTE]\n> The input does not name its backend: times are of an unknown time domain.\n"
    return f"> Times: {time_label_sentence(run)}.\n"


def time_label_sentence(run: Run) -> str:
    return f"{run.backend} backend, {run.time_label}"


_INFO_KEYS = (("machine", "machine"), ("backend", "backend"), ("time domain", "time_domain"),
              ("model", "model"), ("world size", "world_size"), ("K (micro-batches per step)", "k"),
              ("measured steps per case", "measured_steps"), ("bytes source", "bytes_source"),
              ("commit", "git_commit"), ("date", "date"), ("host", "host_name"), ("executable", "executable"),
              ("Google Benchmark library build (not the suite's)", "library_build_type"))


def _run_info(run: Run) -> str:
    out = ["## Run\n"]
    if len(run.files) == 1:
        f = run.files[0]
        rows = [["input", f"`{tables.escape(f.path)}`"]]
        rows += [[label, tables.escape(f.context.get(key))] for label, key in _INFO_KEYS if f.context.get(key)]
        out.append(tables.md_table(["", ""], rows))
    else:
        keys = (("machine", "machine"), ("backend", "backend"), ("model", "model"), ("world", "world_size"),
                ("K", "k"), ("commit", "git_commit"), ("date", "date"))
        rows = [[f"`{tables.escape(f.path)}`"] + [tables.escape(f.context.get(k) or tables.MISSING) for _, k in keys]
                for f in run.files]
        out.append(tables.md_table(["input"] + [label for label, _ in keys], rows))
    for f in run.files:
        command = f.context.get("command")
        label = "Command" if len(run.files) == 1 else f"Command of `{f.path}`"
        if command:
            out.append(f"{label}:\n\n```sh\n{command}\n```\n")
        else:
            out.append(f"{label}: not recorded in the JSON context.\n")
    left = [row for f in run.files for row in left_out_cases(f.context)]
    if left:
        out.append(f"Left out when the matrix was built ({len(left)} case{'s' if len(left) != 1 else ''}: no "
                   "configuration of their system runs them, so they are neither run nor errors):\n")
        out.append(tables.md_table(["case", "why"], [[f"`{tables.escape(c)}`", tables.escape(why)]
                                                      for c, why in left]))
    return "\n".join(out)


def left_out_cases(context: dict) -> list[tuple[str, str]]:
    """(case, reason) of the context's `left_out_cases` (bench/case_matrix.hpp leave_out_unrunnable: a JSON
    list of {case, reason}); [] when absent. Raises InputError when present but not that list."""
    raw = context.get("left_out_cases")
    if raw is None:
        return []
    try:
        rows = json.loads(raw) if isinstance(raw, str) else raw
        return [(str(r["case"]), str(r["reason"])) for r in rows]
    except (ValueError, TypeError, KeyError) as e:
        raise InputError("", f"context left_out_cases is not a JSON list of {{case, reason}}: {e}") from None


def _summary(run: Run, groups: dict[Group, list[Case]]) -> str:
    statuses = Counter(c.status for c in run.cases)
    reps = sorted({c.repetition_count for c in run.cases if c.error is None})
    rep_text = "/".join(str(r) for r in reps) if reps else "0"
    parts = [f"{statuses.get('correct', 0)} correct", f"{statuses.get('wrong', 0)} WRONG",
             f"{statuses.get('error', 0)} failed with an error"]
    if statuses.get("unknown"):
        parts.append(f"{statuses['unknown']} without an oracle result")
    aggregated = sum(1 for c in run.cases if c.aggregates_only)
    out = ["## Summary\n",
           f"{len(run.cases)} cases in {len(groups)} group{'s' if len(groups) != 1 else ''}: "
           f"{', '.join(parts)}; {rep_text} repetition{'' if reps == [1] else 's'} per case. "
           f"Times: {run.time_label}.\n"]
    if aggregated:
        out.append(f"{aggregated} of these cases are Google Benchmark's aggregates only "
                   "(`--benchmark_report_aggregates_only`): their figures are its medians (means where no median "
                   "is written), with no spread over repetitions, and their `max_rel_err` is the mean over "
                   "repetitions, not the largest.\n")
    rows = []
    for group, cases in groups.items():
        for schedule, sc in analysis.by_schedule(cases).items():
            correct = [c for c in sc if c.status == "correct" and c.value(STEP) is not None]
            fastest = min(correct, key=lambda c: c.value(STEP), default=None)
            with_mem = [c for c in correct if c.value(PEAK_DEVICE.counter) is not None]
            leanest = min(with_mem, key=lambda c: (c.value(PEAK_DEVICE.counter), c.value(STEP)), default=None)
            # Peaks are exact bytes: strategies with the same one are a tie, which the cell says.
            least = leanest.value(PEAK_DEVICE.counter) if leanest else None
            same_peak = sum(1 for c in with_mem if c is not leanest and c.value(PEAK_DEVICE.counter) == least)
            wrong = sum(1 for c in sc if c.status == "wrong")
            failed = sum(1 for c in sc if c.status == "error")
            rows.append([
                tables.escape(group.title) if len(groups) > 1 else "",
                registry_of(sc).schedule_display(schedule),
                tables.escape(fastest.key.strategy.display) if fastest else tables.MISSING,
                tables.fmt_ms(fastest.value(STEP)) if fastest else tables.MISSING,
                (tables.escape(leanest.key.strategy.display) + (f" (+{same_peak} more at this peak)" if same_peak else ""))
                if leanest else tables.MISSING,
                tables.fmt_bytes(least) if leanest else tables.MISSING,
                f"{wrong} of {len(sc)}" if wrong else "0",
                str(failed)])
    headers = ["group", "schedule", "fastest correct", "step (ms)", "least device memory (correct)",
               "peak device (B)", "WRONG", "errors"]
    if len(groups) <= 1:
        headers, rows = headers[1:], [r[1:] for r in rows]
    numeric = {headers.index(h) for h in ("step (ms)", "peak device (B)", "errors")}
    out.append(tables.md_table(headers, rows, right=numeric))
    out.append("*Fastest* ranks medians; the next table names the cases tied with each (spreads overlap), among "
               "which no ranking is claimed. *Least device memory*: peaks are exact bytes; among correct strategies "
               "with the same peak the faster is named, and *+N more at this peak* counts the others.\n")
    return "\n".join(out)


def _group_section(run: Run, group: Group, cases: list[Case], folder: Path, time_label: str, traces: TraceSet,
                   target: Path) -> str:
    slug = group.slug
    reps = sorted({c.repetition_count for c in cases if c.error is None})
    out = [f"## {group.title}\n"]

    out.append("### Step time by phase\n")
    png = plot_step_phases(cases, folder / f"{slug}.step_phases.png", group.title, time_label)
    if png is None:
        out.append("Skipped: no case has `step_ms`.\n")
    else:
        out.append(_image(f"Step time by phase, {time_label}", png))
        rep_word = "repetition" if reps == [1] else "repetitions"
        out.append(f"Median over {'/'.join(map(str, reps)) or '0'} {rep_word}, ms per step ({time_label}); "
                   "each phase is the max over ranks. The black tick is `step_ms`: phases on separate streams "
                   "overlap, so a stack may pass it. *Other* is the step time no phase covers (step − Σ phases, "
                   "clipped at 0): the streams' and the host's waits and the gaps between ops, the host time "
                   "of `--hook-host-us` among them; where phases "
                   "overlap it reads 0 and the waits hide in the overlap.\n")
    notes = analysis.missing_notes(cases, [STEP] + [p.counter for p in PHASES])
    out += [f"- {n}" for n in notes] + ([""] if notes else [])
    out.append(_details("Table: step time and phases (ms)", tables.phase_table(cases)))
    overlap = tables.overlap_table(cases)
    if overlap is not None:
        out.append("Overlap: the backward as the GPU ran it (`compute_ms`) and the reduce-scatter (`nccl_ms`) "
                   "against the step; `exposed_comm_ms` is reduce-scatter time during which no backward ran, so "
                   "a step below backward + RS is the overlap at work (`--lookahead`, docs/DESIGN.md §2)"
                   + (" — on the host backend ops run one after another, so nothing is hidden" if run.backend == "host" else "")
                   + ".\n")
        out.append(_details("Table: overlap of backward and reduce-scatter (ms)", overlap))

    out.append("### Accumulation cost\n")
    out.append(views.accum_cost_part(cases, folder, slug, group.title, time_label))

    out.append("### Timeline of one step\n")
    out.append(_timeline_part(group, cases, folder, traces, target, run.backend))

    out.append("### Peak memory\n")
    png = plot_measured_predicted(cases, MEMORY_PAIRS, folder / f"{slug}.memory.png", group.title)
    out.append(_image("Peak device and pinned memory, one bar a case, predicted marked where it differs", png) if png else
               "Skipped: no case has peak memory counters.\n")
    notes = analysis.missing_notes(cases, [c for p in MEMORY_PAIRS for c in (p.counter, p.model)])
    out += [f"- {n}" for n in notes] + ([""] if notes else [])
    out.append(views.mismatch_sentence(cases, MEMORY_PAIRS))
    out.append(_details("Table: peak memory per rank (bytes)", tables.paired_table(cases, MEMORY_PAIRS)))

    out.append("### PCIe traffic\n")
    traffic = TRAFFIC_PAIRS + (NCCL_INPUT,)
    diagnosis = analysis.blind_diagnosis(cases)
    png = plot_measured_predicted(cases, traffic, folder / f"{slug}.pcie.png", group.title, diagnosis)
    out.append(_image("PCIe and reduce-scatter bytes per step, predicted marked where it differs", png) if png else
               "Skipped: no case has `h2d_bytes`, `d2h_bytes` or `nccl_input_bytes`.\n")
    out.append(views.diagnosis_sentence(diagnosis))
    sources = {_file_for(run, c).context.get("bytes_source") for c in cases} - {None}
    if sources:
        out.append(f"Measured bytes come from {', '.join(sorted(sources))}.\n")
    notes = analysis.missing_notes(cases, [c for p in traffic for c in (p.counter, p.model)])
    out += [f"- {n}" for n in notes] + ([""] if notes else [])
    out.append(views.mismatch_sentence(cases, traffic))
    out.append(_details("Table: H2D, D2H and reduce-scatter input bytes per rank and step",
                        tables.paired_table(cases, traffic)))

    out.append("### Memory against step time\n")
    png = plot_pareto(cases, folder / f"{slug}.pareto.png", group.title, time_label)
    if png is None:
        out.append("Skipped: no case has both `peak_device_bytes` and `step_ms`.\n")
    else:
        out.append(_image("Peak device memory against step time, Pareto front", png))
        registry = registry_of(cases)
        fronts = {registry.schedule_display(s): analysis.pareto_front(sc) for s, sc in analysis.by_schedule(cases).items()}
        out.append("The Pareto front of correct cases, from the least device memory up: with a budget of at "
                   "least the first column, the row's strategy is the fastest that fits. Wrong cases are "
                   "never on it.\n")
        out.append(tables.pareto_table(fronts))

    out.append("### Correctness\n")
    png = plot_correctness(cases, folder / f"{slug}.correctness.png", group.title)
    out.append(_image("Correctness matrix", png))
    out.append("✓ correct, ✗ **WRONG** (error above the oracle's bound), ⚠ the case failed; the number is "
               "`max_rel_err` = ‖out − ref‖ / ‖ref‖, the largest over repetitions"
               f"{' (the mean, for aggregates only)' if any(c.aggregates_only for c in cases) else ''}. "
               "The right panel draws it on a "
               "log axis against each case's `err_bound` (the black tick), the bound the dtypes' roundings "
               "allow (docs/DESIGN.md §5).\n")
    out.append(tables.correctness_table(cases))
    if any(c.error is not None for c in cases):
        out.append("Cases that failed with an error:\n")
        out.append(tables.errors_table(cases))

    out.append("### Phases against measured ceilings\n")
    out.append(_ceiling_part(run, cases, folder, slug, group))
    png = plot_bound_ratio(cases, folder / f"{slug}.bound.png", group.title)
    if png:  # only a run with ceilings has bound_ms (docs/DESIGN.md §6)
        out.append("### Step time against the bound\n")
        out.append(_image("Each case's step_ms over its bound_ms", png))
        out.append("Each bar: `bound_ratio` = `step_ms` / `bound_ms`, the least time the case's own bytes and "
                   "FLOPs take at this run's ceilings; the term that sets the bound beside it.\n")
    return "\n".join(out)


def _ceiling_part(run: Run, cases: list[Case], folder: Path, slug: str, group: Group) -> str:
    files = {c.source: _file_for(run, c) for c in cases}
    ceilings: dict[str, float] = {}
    for f in files.values():
        for k, v in f.context.ceilings.items():
            ceilings.setdefault(k, v)
    has_fracs = any(c.value(f.counter) is not None for c in cases for f in CEILING_FRACTIONS)
    if not has_fracs:
        why = ("the host backend measures no hardware ceilings" if run.is_host else
               "the JSON has no `*_frac_ceiling` counters")
        listed = (" The context has ceilings " + ", ".join(f"`{k}`" for k in ceilings) + ".") if ceilings else ""
        return f"Skipped: {why}.{listed}\n"
    out = []
    if ceilings:
        out.append("Ceilings measured in the same run, the way the strategies use the hardware:\n")
        out.append(tables.ceilings_table(ceilings))
    else:
        out.append("The context names no ceiling values; fractions are as the benchmark reported them.\n")
    png = plot_ceilings(cases, ceilings, folder / f"{slug}.ceilings.png", group.title)
    out.append(_image("Each phase as a fraction of its measured ceiling", png))
    out.append("Each cell: the phase's bandwidth as a percentage of its ceiling (GB/s under the column); "
               "– where the case did not run that phase.\n")
    notes = analysis.missing_fraction_notes(cases)
    out += [f"- {n}" for n in notes] + ([""] if notes else [])
    out.append(_details("Table: fraction of ceiling per phase", tables.fraction_table(cases)))
    return "\n".join(out)


def _scaling_section(run: Run, folder: Path, time_label: str) -> str:
    out = ["## Scaling\n"]
    for axis, what in (("k", "K"), ("world", "world size")):
        figs = analysis.scaling_figures(run.cases, axis)
        out.append(f"### Scaling with {what}\n")
        if not figs:
            values = sorted({c.key.k if axis == "k" else c.key.world for c in run.cases})
            out.append(f"Skipped: every case has {what} {', '.join(map(str, values))}; a scaling plot needs runs "
                       f"at two or more values of {what} (give several JSON files).\n")
            continue
        for fig in figs:
            png = plot_scaling(fig, folder / f"scaling_{axis}.{fig.slug}.png", time_label)
            out.append(f"#### {fig.title}\n")
            out.append(_image(f"Step time against {what}, {time_label}", png))
            out.append(_details(f"Table: step time (ms) against {what}", tables.scaling_table(fig)))
    return "\n".join(out)


def _presets_text(run: Run) -> str:
    """'fairscale = data/copy-fairscale/shape/pre-post/no-shard, fsdp1 = ...', from the run's
    registry: each preset's label with its copy-in, as the report's tables name its cases."""
    return ", ".join(f"{p.name} = {Strategy(**dict(p.axes), copy_in=p.copy_in, registry=run.registry).label}"
                     for p in run.registry.presets)


def _setting_text(run: Run, key: str, flag: str, letter: str, auto: str, named: str, before: str,
                  extra: str = "") -> str | None:
    """The sentences saying how a per-system setting ran (each file's context `key`, bench/cli.cpp
    `flag`): `auto` (its text given the prefix "(`FLAG auto`[, in the runs that gave it]): "), each
    named value (`named` formatted with {value}), and `before` for files from before the flag beside
    files that have it; `extra` then, and the case name's segment `/FLAG:LETTER` last. None when no
    file has it."""
    given = {f.context.get(key) for f in run.files}
    if given <= {None}:
        return None
    out = []
    if "auto" in given:
        out.append(auto.format(flag=f"`{flag} auto`" + (", in the runs that gave it" if len(given) > 1 else "")))
    out += [named.format(value=v) for v in sorted(given - {"auto", None})]
    if None in given:
        out.append(before)
    if extra:
        out.append(extra)
    out.append(f"A case name ending `/{flag.lstrip('-')}:{letter}` ran {letter} (docs/DESIGN.md §2).")
    return " ".join(out)


def _device_add_grid_text(run: Run) -> str | None:
    """How the run's device adds launched (--device-add-grid; _setting_text): under auto, on PyTorch's
    grid for the presets' combinations (the real systems), two blocks per SM otherwise."""
    torch = ", ".join(p.name for p in run.registry.presets if p.device_add_grid == "torch") or "no preset"
    return _setting_text(
        run, "device_add_grid", "--device-add-grid", "G",
        "Device adds ({flag}): on every SM as PyTorch's `+=` for the strategies with the binding, offload, mode "
        f"and division of {torch} (the real systems), on two blocks per SM for every other strategy (the suite's "
        "idealised add, which leaves SMs to the backward); each case's label says which.",
        "Device adds on the grid `{value}` for every strategy of the runs with `--device-add-grid {value}`.",
        "The runs from before `--device-add-grid` added on two blocks per SM.")


def _comm_priority_text(run: Run) -> str | None:
    """The comm stream's priority (--comm-priority; _setting_text): under auto, 0 for the presets whose
    systems make their reduce-scatter stream at 0, the device's greatest otherwise; runs from before the
    flag at the greatest; and, where any case ran at 0, that its nccl_ms is an upper bound."""
    normal = [p.name for p in run.registry.presets if p.comm_priority == "default"]
    given = {f.context.get("comm_priority") for f in run.files}
    at_zero = "default" in given or ("auto" in given and bool(normal))
    return _setting_text(
        run, "comm_priority", "--comm-priority", "P",
        "The comm stream ({flag}): at CUDA's default priority 0 for the strategies with the binding, offload, "
        f"mode and division of {', '.join(normal) or 'no preset'} (their systems' reduce-scatter streams are "
        "`torch.cuda.Stream()`), at the device's greatest for every other strategy (FSDP2's reduce-scatter "
        "stream is above its compute stream, and so is the suite's: no collective queues behind a backward "
        "kernel); each case's label says which.",
        "The comm stream at priority `{value}` for every strategy of the runs with `--comm-priority {value}`.",
        "The runs from before `--comm-priority` ran every strategy's comm stream at the device's greatest.",
        "At priority 0 a case's `nccl_ms` also counts its collectives' wait behind the backward's running "
        "kernels: an upper bound of their own time." if at_zero else "")


def _hook_host_text(run: Run) -> str | None:
    """The host time spent before each unit's backward (--hook-host-us; _setting_text): under auto, the
    presets' measured values (PresetInfo::hook_host_us), 0 for every other strategy."""
    measured = [f"{p.name} {p.hook_host_us} µs" for p in run.registry.presets if p.hook_host_us]
    return _setting_text(
        run, "hook_host_us", "--hook-host-us", "N",
        "Host time before each unit's backward ({flag}), the Python of a real system's hooks, spent on the issuing "
        f"thread: {', '.join(measured) or 'none'} for the strategies with those presets' binding, offload, mode and "
        "division (measured, docs/PRESETS.md H1), none for every other strategy; each case's label says it where it "
        "is spent. On a GPU it delays the step only where the host cannot run ahead (after a blocking copy); on the "
        "host backend, which runs every operation on the issuing thread, it adds to every step it is spent in.",
        "Host time of `{value}` µs before each unit's backward for every strategy of the runs with "
        "`--hook-host-us {value}`.",
        "The runs from before `--hook-host-us` spent no host time before a unit's backward.")


_REPOSITORY = Path(__file__).resolve().parents[2]


def _in_repository(path: str) -> bool:
    """True when `path` (as given, relative to the working folder) lies inside this checkout."""
    return Path(path).resolve().is_relative_to(_REPOSITORY)


def _notes(run: Run, name: str, traces: TraceSet, real: Run | None = None) -> str:
    out = ["## Notes\n",
           "- Every value is per optimizer step and per rank; times are the max over ranks (ms) and the median "
           "over repetitions; bytes are exact and binary units (MiB, GiB) are used on plot axes.",
           "- *Predicted* is the benchmark's `model_*` counter, from the byte and memory model of docs/DESIGN.md §3.",
           f"- A strategy is binding/offload/mode; presets: {_presets_text(run)}."]
    grid = _device_add_grid_text(run)
    if grid:
        out.append(f"- {grid}")
    priority = _comm_priority_text(run)
    if priority:
        out.append(f"- {priority}")
    hooks = _hook_host_text(run)
    if hooks:
        out.append(f"- {hooks}")
    out += [f"- {tables.escape(n)}" for n in run.notes + traces.notes + traces.refused + (real.notes if real else [])]
    inputs = " ".join(f.path for f in run.files + (real.files if real else []))
    given = "" if traces.found_beside_input else "".join(f" --trace {p}" for p in traces.paths)
    # A trace outside the repository (a /tmp of the machine that ran it) is not what a reader has.
    away = [] if traces.found_beside_input else [p for p in traces.paths if not _in_repository(p)]
    unkept = (f" The trace {', '.join(f'`{p}`' for p in away)} is not in the repository: without it the "
              "report is the same but for its timelines." if away else "")
    out.append(f"\nRegenerate: `.venv/bin/python scripts/report.py {inputs}{given} --name {name}` "
               f"(or any python with scripts/requirements.txt installed).{unkept}\n")
    return "\n".join(out)


# --- Timeline of one step (from the trace) -----------------------------------------------------------

HOW_TO_TRACE = ("`scripts/run.sh` writes one (`reports/NAME/trace.json`, which the report finds beside "
                "`run.json`); or run `shardaccum_bench ... --trace trace.json` and give it to this tool with "
                "`--trace trace.json` (a `trace.json` beside a single input JSON is found without it).")


def _trace_link(path: str, target: Path) -> str:
    p = Path(path)
    try:
        inside = p.resolve().parent == target.resolve()
    except OSError:
        inside = False
    return f"[`{p.name}`]({p.name})" if inside else f"`{tables.escape(path)}`"


def _timeline_rows(steps: list[StepTimeline], by_key: dict) -> list[TimelinePanel]:
    """Panels by schedule (report order), rows by strategy; each row judged by the run JSON's case."""
    per_schedule: dict[str, list[StepTimeline]] = {}
    for st in steps:
        per_schedule.setdefault(st.key.schedule if st.key else "", []).append(st)

    def _registry(schedule: str):  # the registry of the cases drawn for this schedule
        return per_schedule[schedule][0].key.registry

    panels = []
    for schedule in sorted(per_schedule, key=lambda s: (s == "", _registry(s).schedule_sort_key(s) if s else ())):
        rows = []
        for st in sorted(per_schedule[schedule], key=lambda st: (st.key.strategy.sort_key if st.key else (),
                                                                   st.case_name)):
            case = by_key.get(st.key) if st.key else None
            label = st.key.strategy.display if st.key else st.case_name
            rows.append(TimelineRow(label, st, case.status if case else "missing",
                                    case.max_rel_err if case else None))
        title = (f"schedule {_registry(schedule).schedule_display(schedule)}" if schedule
                 else "cases whose names this tool cannot read")
        panels.append(TimelinePanel(title, rows))
    return panels


def _timeline_figures(panels: list[TimelinePanel], folder: Path, slug: str, title: str,
                      time_label: str) -> list[tuple[str, Path]]:
    """One PNG for all panels when they are few, else one per schedule: [(alt text, path)]."""
    if sum(len(p.rows) for p in panels) <= ROWS_PER_FIGURE:
        path = plot_timeline(panels, folder / f"{slug}.timeline.png", title, time_label)
        return [(f"Timeline of one step per case, {time_label}", path)]
    written = []
    for p in panels:
        schedule = p.rows[0].timeline.key.schedule if p.rows[0].timeline.key else "other"
        path = plot_timeline([p], folder / f"{slug}.timeline-{schedule}.png", f"{title} · {p.title}", time_label)
        written.append((f"Timeline of one step, {p.title}, {time_label}", path))
    return written


def _timeline_text(panels: list[TimelinePanel], traces: TraceSet, target: Path, backend: str | None) -> str:
    links = ", ".join(_trace_link(p, target) for p in traces.paths)
    other = sorted(traces.backends - {backend}) if backend else []
    mismatch = (f" **The trace is of backend {', '.join(other)}, the run JSON of backend {backend}: they come from "
                "different runs.**" if other else "")
    found = " (found beside the input)" if traces.found_beside_input else ""
    if on_gpu_time(panels):
        return (f"From the trace {links}{found}: for each case, {drawn_step(panels)} of rank 0 from the "
                f"backend's stream tracks ({traces.time_label}), from the first to the last of its GPU ops and host tasks, each case "
                "on its own time axis (so one long step cannot squash the others). Lanes: the compute, comm and "
                "copy streams with the backend's ops, and the host tasks (CPU adds), coloured as in the step-time "
                "plot. A black line ends the step; WRONG cases have a red title on pink. Events shorter than "
                f"{100 * MIN_WIDTH:g}% of the axis are drawn that wide so they stay visible. Every rank and step: "
                f"open the trace in [ui.perfetto.dev](https://ui.perfetto.dev).{mismatch}\n")
    return (f"From the trace {links}{found}: for each case, the first measured step of rank 0, in ms from the "
            f"step's start ({traces.time_label}); one time axis per schedule. This trace has no GPU stream tracks "
            "(a binary before issue 15), so the step is the host's step range. Lanes, top down: the micro-batches "
            "(dark S = sync, light n = no-sync), the units, the phases (NVTX ranges, coloured as in the step-time "
            "plot), then the host and each stream with the ops that ran on it. A black line ends the step; WRONG "
            f"cases have a red title on pink. Events shorter than {100 * MIN_WIDTH:g}% of the axis are drawn that "
            "wide so they stay visible. Every rank and step: open the trace in "
            f"[ui.perfetto.dev](https://ui.perfetto.dev).{mismatch}\n")


def _timeline_part(group: Group, cases: list[Case], folder: Path, traces: TraceSet, target: Path,
                   backend: str | None) -> str:
    if not traces and traces.refused:
        return "No trace drawn: " + " ".join(tables.escape(why) + "." for why in traces.refused) + "\n"
    if not traces:
        return f"No trace given. {HOW_TO_TRACE}\n"
    steps = [st for st in traces.steps.values() if st.key is not None and st.key.group == group]
    if not steps:
        return (f"The trace ({', '.join(_trace_link(p, target) for p in traces.paths)}) has no case of this group "
                f"(it holds {len(traces.steps)} other case{'s' if len(traces.steps) != 1 else ''}).\n")
    panels = _timeline_rows(steps, {c.key: c for c in cases})
    out = [_image(alt, path) for alt, path in _timeline_figures(panels, folder, group.slug, group.title,
                                                               traces.time_label)]
    out.append(_timeline_text(panels, traces, target, backend))
    traced = {st.key for st in steps}
    untraced = [c for c in cases if c.key not in traced]
    extra = [st for st in steps if st.key not in {c.key for c in cases}]
    if untraced:
        listed = "; ".join(f"{c.key.schedule} {c.key.strategy.display}" for c in untraced[:6])
        more = f" and {len(untraced) - 6} more" if len(untraced) > 6 else ""
        out.append(f"- {len(untraced)} case{'s' if len(untraced) != 1 else ''} of the run JSON "
                   f"{'are' if len(untraced) != 1 else 'is'} not in the trace: {tables.escape(listed)}{more}.")
    if extra:
        out.append(f"- {len(extra)} case{'s' if len(extra) != 1 else ''} of the trace "
                   f"{'are' if len(extra) != 1 else 'is'} not in the run JSON: drawn, marked *not in the run JSON*.")
    if untraced or extra:
        out.append("")
    rows = []
    by_key = {c.key: c for c in cases}
    for panel in panels:
        for r in panel.rows:
            st, case = r.timeline, by_key.get(r.timeline.key)
            rows.append([st.key.registry.schedule_display(st.key.schedule), tables.escape(r.label), str(st.step),
                         str(st.rank),
                         tables.fmt_ms(st.dur_ms), tables.fmt_ms(case.value("step_ms")) if case else tables.MISSING,
                         tables.result_cell(case) if case else "not in the run JSON"])
    out.append(_details("Table: the drawn step of each case (ms)",
                        tables.md_table(["schedule", "strategy", "step", "rank", "step in the trace (ms)",
                                         "step_ms in the JSON (median)", "result"], rows, right={2, 3, 4, 5})))
    return "\n".join(out)


def _trace_only_sections(run: Run, folder: Path, traces: TraceSet, target: Path) -> str:
    """Sections for the trace's cases of groups the run JSON does not have (drawn all the same)."""
    groups = set(run.groups())
    extra: dict[Group | None, list[StepTimeline]] = {}
    for st in traces.steps.values():
        g = st.key.group if st.key is not None else None
        if g not in groups:
            extra.setdefault(g, []).append(st)
    out = []
    for g in sorted(extra, key=lambda g: (g is None, g.sort_key if g else ())):
        title = g.title if g else "cases whose names this tool cannot read"
        slug = g.slug if g else "unparsed"
        out.append(f"## {title} (only in the trace)\n")
        out.append("### Timeline of one step\n")
        out.append("The run JSON has no case of this group; the trace's cases are drawn without a result.\n")
        panels = _timeline_rows(extra[g], {})
        out += [_image(alt, path) for alt, path in _timeline_figures(panels, folder, slug, title, traces.time_label)]
        out.append(_timeline_text(panels, traces, target, run.backend))
    return "\n".join(out)
