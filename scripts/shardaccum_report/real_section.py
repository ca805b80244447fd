"""The report's "Real systems beside their presets" section and its intro table of real runs.

Each real case (bench/real/run.py) beside its preset case (pairing.py): step time, accumulation costs
A and B, gradient D2H/H2D bytes, d2h_pageable_bytes, peak device memory, verdicts; every ratio is
real / preset of the figures in the rows. Time ratios are printed only when the suite run's times are
GPU times (cuda backend): host-backend times are host wall-clock, and a ratio to them means nothing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from . import tables
from .counters import ACCUM_COST_A, ACCUM_COST_B, D2H_BYTES, H2D_BYTES, PEAK_DEVICE, STEP
from .loading import Case, Run
from .pairing import Pair, pair_cases, ratio
from .plots import plot_real_beside

STEP_MEDIAN = "step_ms_median"
D2H_PAGEABLE = "d2h_pageable_bytes"
DEVICE_BASELINE = "device_baseline_bytes"
_CONTEXT = (("torch", "torch_version"), ("CUDA", "cuda_version"), ("NCCL", "nccl_version"), ("GPU", "gpu"),
            ("world", "world_size"), ("commit", "git_commit"), ("date", "date"))


def time_ratio_refusal(suite: Run | None) -> str | None:
    """Why time ratios are not printed (None when they are: the suite run's times are GPU times)."""
    if suite is None:
        return "no suite run is given"
    if suite.is_host:
        return ("the suite run is of the host backend: its preset times are host wall-clock, not GPU time, while "
                "the real systems' are GPU time, so a ratio of the two means nothing")
    if suite.backend != "cuda":
        return f"the suite run's backend is {suite.backend or 'not named'}: its times are of an unknown time domain"
    return None


def fmt_ratio(r: float | None) -> str:
    """A ratio real / preset with 3 decimals; 'inf' when the preset's figure is 0 and the real one is not."""
    if r is None:
        return tables.MISSING
    return "inf" if math.isinf(r) else f"{r:.3f}"


def ratio_cell(real: float | None, preset: float | None) -> str:
    """The ratio's cell: 'both 0' where neither moved a byte (0 / 0 is no ratio), 'preset 0' where
    only the real system did (no finite ratio says how far apart they are), else fmt_ratio."""
    if real == 0 and preset == 0:
        return "both 0"
    if preset == 0 and real:
        return "preset 0"
    return fmt_ratio(ratio(real, preset))


def _value(case: Case | None, metric: str) -> float | None:
    return case.value(metric) if case is not None else None


def _result(case: Case | None) -> list[str]:
    return [tables.MISSING, tables.MISSING] if case is None else [tables.result_cell(case),
                                                                  tables.fmt_err(case.max_rel_err)]


def _lead(p: Pair) -> list[str]:
    preset = tables.escape(p.preset_key.strategy.display) if p.preset_key else tables.MISSING
    if p.why:
        preset = f"{preset}: **{tables.escape(p.why)}**" if p.preset_key else f"**{tables.escape(p.why)}**"
    return [p.key.schedule, p.key.system, p.key.offload, preset]


def time_table(pairs: list[Pair], with_ratios: bool) -> str:
    """Step time (real mean and median, preset), ratio, accumulation costs A and B, both verdicts."""
    headers = ["schedule", "system", "offload", "preset case", "real step mean (ms)", "real step median (ms)",
               "preset step (ms)", "step ratio", "accum cost A (ms)", "accum cost B (ms)", "real result",
               "real max_rel_err", "preset result", "preset max_rel_err"]
    rows = []
    for p in pairs:
        real, preset = p.real.value(STEP), _value(p.preset, STEP)
        shown = ratio_cell(real, preset) if with_ratios else "not shown"
        rows.append(_lead(p) + [tables.fmt_ms(real), tables.fmt_ms(p.real.value(STEP_MEDIAN)), tables.fmt_ms(preset),
                                shown, tables.fmt_ms(p.real.value(ACCUM_COST_A)),
                                tables.fmt_ms(p.real.value(ACCUM_COST_B))] + _result(p.real) + _result(p.preset))
    return tables.md_table(headers, rows, right=set(range(4, 10)))


def bytes_table(pairs: list[Pair]) -> str:
    """Gradient D2H/H2D bytes (real, preset, ratio), d2h_pageable_bytes, peak device memory."""
    headers = ["schedule", "system", "offload", "preset case"]
    for what in ("D2H", "H2D"):
        headers += [f"grad {what} real (B)", f"grad {what} preset (B)", f"{what} ratio"]
    headers += ["d2h pageable real (B)", "peak device real (B)", "device baseline real (B)",
                "peak device preset (B)", "peak ratio"]
    rows = []
    for p in pairs:
        row = _lead(p)
        for counter in (D2H_BYTES.counter, H2D_BYTES.counter, PEAK_DEVICE.counter):
            real, preset = p.real.value(counter), _value(p.preset, counter)
            if counter == PEAK_DEVICE.counter:
                row += [tables.fmt_bytes(p.real.value(D2H_PAGEABLE)), tables.fmt_bytes(real),
                        tables.fmt_bytes(p.real.value(DEVICE_BASELINE))]
            else:
                row += [tables.fmt_bytes(real)]
            row += [tables.fmt_bytes(preset), ratio_cell(real, preset)]
        rows.append(row)
    return tables.md_table(headers, rows, right=set(range(4, len(headers))))


def real_inputs(real: Run) -> str:
    """The intro's table of real runs: torch, CUDA, NCCL, GPU, world, commit, date; then each run's
    systems settings (the context's `systems` JSON string) and command."""
    rows = [[f"`{tables.escape(f.path)}`"] + [tables.escape(f.context.get(k) or tables.MISSING) for _, k in _CONTEXT]
            for f in real.files]
    out = ["## Real systems\n", tables.md_table(["real input"] + [label for label, _ in _CONTEXT], rows)]
    for f in real.files:
        systems = f.context.get("systems")
        try:
            parsed = json.loads(systems) if systems else None
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            settings = "; ".join(f"**{s}**: {tables.escape(json.dumps(v, sort_keys=True))}" for s, v in parsed.items())
        else:
            settings = f"`{tables.escape(systems)}`" if systems else "not recorded"
        out.append(f"Systems settings of `{tables.escape(f.path)}`: {settings}; TF32 "
                   f"{tables.escape(f.context.get('tf32') or 'not recorded')}.\n")
        command = f.context.get("command")
        out.append(f"Command:\n\n```sh\n{command}\n```\n" if command else
                   "Command: not recorded in the JSON context.\n")
        out.extend(_run_notes(f))
    return "\n".join(out)


def _run_notes(f) -> list[str]:
    """What a real run's JSON says beyond its cases: that it had not finished (context 'partial', the
    runner rewrites the file after every case), the cases it skipped with why (context
    'skipped_cases': schedules DeepSpeed cannot run), and each errored case's message."""
    notes = []
    where = f"`{tables.escape(f.path)}`"
    if f.context.get("partial"):
        notes.append(f"> [!WARNING]\n> **Unfinished run** {where}: {tables.escape(f.context.get('partial'))}.\n")
    skipped = f.context.raw.get("skipped_cases")
    if isinstance(skipped, list) and skipped:
        by_reason: dict[str, list[str]] = {}
        for s in skipped:
            if isinstance(s, dict):
                by_reason.setdefault(str(s.get("reason", "no reason given")), []).append(str(s.get("name", "?")))
        for reason, names in by_reason.items():
            shown = ", ".join(f"`{tables.escape(n)}`" for n in names)
            notes.append(f"Skipped by the runner in {where} ({len(names)}, not run and not errors): {shown}: "
                         f"{tables.escape(reason)}.\n")
    errors = [(c.key.name, r.error) for c in f.cases.values() for r in c.repetitions if r.error]
    for name, error in errors:
        notes.append(f"Error of `{tables.escape(name)}`: {tables.escape(error[:500])}\n")
    return notes


def render_section(real: Run, suite: Run | None, folder: Path) -> str:
    """The section's Markdown; writes per group two PNGs (step time, gradient D2H bytes) into `folder`."""
    pairs = pair_cases(real, suite)
    refusal = time_ratio_refusal(suite)
    out = ["## Real systems beside their presets\n",
           "Each real case beside the suite case of the preset named like its system: same model, world, schedule "
           "and dtype; real `offload:cpu` beside the preset's own offload value, real `offload:none` beside the "
           "preset's strategy with no offload (both from the registry). Ratios are real / preset. Real times: "
           f"{tables.escape(real.time_label)}; preset times: "
           f"{tables.escape(suite.time_label) if suite else 'no suite run given'}.\n"]
    if refusal:
        out.append(f"> [!WARNING]\n> **No time ratios**: {tables.escape(refusal)}.\n")
    out.append("Peak device memory: the real peak includes the model's parameters (and what the system keeps on "
               "the device); the preset's counts the suite's gradient buffers, no parameters. `device baseline` is "
               "the real process's allocated memory before the first step.\n")
    by_group: dict = {}
    for p in pairs:
        by_group.setdefault(p.key.group, []).append(p)
    for group, mine in sorted(by_group.items(), key=lambda item: item[0].sort_key):
        missing = sum(1 for p in mine if p.preset is None)
        out.append(f"### {group.title}\n")
        if missing:
            out.append(f"{missing} of {len(mine)} real cases have no preset case in the inputs.\n")
        domains = f"real: {real.time_label}; preset: {suite.time_label if suite else 'no suite run'}"
        png = plot_real_beside(mine, STEP, "ms", folder / f"real.{group.slug}.step.png",
                               f"Step time, real beside preset — {group.title}\n{domains}", "step time (ms)")
        out.append(f"![Step time, real beside preset]({png.name})\n" if png else "Skipped: no real case has "
                   "`step_ms`.\n")
        out.append(time_table(mine, refusal is None))
        png = plot_real_beside(mine, D2H_BYTES.counter, "bytes", folder / f"real.{group.slug}.d2h.png",
                               f"Gradient D2H bytes per step and rank, real beside preset — {group.title}",
                               "gradient D2H bytes per step")
        out.append(f"![Gradient D2H bytes, real beside preset]({png.name})\n" if png else "Skipped: no real case "
                   "has `d2h_bytes`.\n")
        out.append(bytes_table(mine))
    return "\n".join(out)


def render_real_only(real: Run, name: str, folder: Path) -> str:
    """The README of real-system runs without a suite run: their context and cases, no preset beside them."""
    inputs = " ".join(f.path for f in real.files)
    return "\n".join([f"# shardaccum report: {name}\n", real_inputs(real), render_section(real, None, folder),
                      "## Notes\n", *(f"- {tables.escape(n)}" for n in real.notes),
                      f"\nRegenerate: `.venv/bin/python scripts/report.py {inputs} --name {name}` (give the "
                      "suite run's JSON too to see each real case beside its preset)\n"])

