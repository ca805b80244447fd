"""One step of each case drawn from the trace as a Gantt chart: one row per case, one lane per track.

A trace with GPU step tracks (issue 15) is drawn on the GPU's time: the median step of each case,
lanes compute / comm / copy / host tasks, each case on its own time axis (one outlier cannot squash
the others). An older trace is drawn as before (the host's step range and the events inside it, one
axis per schedule) and the figure says so."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..counters import OTHER, PHASES, Phase
from ..tables import fmt_err
from ..trace import GPU_TRACKS, H2D_TRACK, PHASES_TRACK, Event, StepTimeline, track_order
from .style import ERROR, WRONG, new_figure, save, styled

_PHASE = {p.counter: p for p in PHASES}
OTHER_OP = Phase("other", "other op", OTHER.color)
# Event names (host backend ops and NVTX phases; CUPTI copies) to the step-time plot's phases.
_BY_NAME = {"backward": "backward_ms", "reduce_scatter": "nccl_ms", "accumulate": "accumulate_ms",
            "h2d": "h2d_ms", "memcpy htod": "h2d_ms", "d2h": "d2h_ms", "memcpy dtoh": "d2h_ms",
            "cpu_add": "cpu_add_ms", "finalize": "finalize_ms"}
# CUPTI kernel classes (profiling/gpu_activity.cpp).
_BY_CLASS = {"nccl": "nccl_ms", "generate": "backward_ms", "accumulate": "accumulate_ms"}

MICRO_BATCH = {"S": "#3B3B3B", "n": "#B8B8B8"}
UNIT_SHADES = ("#D9D9D9", "#EFEFEF")
WRONG_BACKGROUND = "#FBE3E3"
ERROR_BACKGROUND = "#EDEDED"
GPU_LANE_LABELS = {"compute stream": "compute", "comm stream": "comm", "copy stream": "copy",
                   "host tasks": "host tasks"}
OLD_TRACE_NOTE = ("this trace has no GPU stream tracks (a binary before issue 15): the host's step range and "
                  "the events inside it, one axis per schedule, as before")
MIN_WIDTH = 0.0008        # of the axis: shorter events are drawn this wide so that they stay visible
ROWS_PER_FIGURE = 16      # above this, the report draws one figure per schedule
_AXES_WIDTH_IN = 11.0


def phase_of(e: Event) -> Phase:
    """The phase an event belongs to, for its colour (OTHER_OP when none)."""
    counter = _BY_CLASS.get(str(e.args.get("class", ""))) or _BY_NAME.get(e.name.lower())
    if counter is None and "reducescatter" in e.name.lower().replace("_", ""):
        counter = "nccl_ms"
    return _PHASE.get(counter, OTHER_OP)


@dataclass
class TimelineRow:
    """One case's step and how the run JSON judged the case.

    status: 'correct', 'wrong', 'error', 'unknown' (no oracle result) or 'missing' (not in the run JSON).
    """

    label: str
    timeline: StepTimeline
    status: str = "missing"
    max_rel_err: float | None = None


@dataclass
class TimelinePanel:
    """The rows of one schedule, drawn on one shared time axis."""

    title: str
    rows: list[TimelineRow]


def on_gpu_time(panels: list[TimelinePanel]) -> bool:
    """Whether every row is a GPU step (drawn on the GPU's time) rather than a host step range."""
    rows = [r for p in panels for r in p.rows]
    return bool(rows) and all(r.timeline.gpu for r in rows)


def _several_steps(panels: list[TimelinePanel]) -> bool:
    """Whether some case has several traced steps (one per case, `--trace-steps 1`, run.sh's default, has
    no median to speak of)."""
    return any(r.timeline.traced_steps > 1 for p in panels for r in p.rows)


def drawn_step(panels: list[TimelinePanel]) -> str:
    """What each GPU-time row draws, for the titles and the report's text: "the median traced step" where
    some case has several traced steps, else "the traced step"."""
    return "the median traced step" if _several_steps(panels) else "the traced step"


def _lanes(panels: list[TimelinePanel]) -> list[tuple[str, str]]:
    """(key, label) of the lanes: GPU steps: compute, comm, copy, host tasks. Otherwise the phases
    track's three levels, then every other track drawn."""
    if on_gpu_time(panels):
        lanes = [(t, GPU_LANE_LABELS[t]) for t in GPU_TRACKS]
        if any(e.track == H2D_TRACK for p in panels for r in p.rows for e in r.timeline.events):
            lanes.insert(3, (H2D_TRACK, "h2d"))  # after copy: both copy directions side by side
        return lanes
    tracks = {e.track for p in panels for r in p.rows for e in r.timeline.events} - {PHASES_TRACK}
    lanes = [("micro-batch", "micro-batches"), ("unit", "units"), ("phase", "phases")]
    return lanes + [(t, t.removesuffix(" stream")) for t in track_order(tracks)]


def _lane_of(e: Event) -> str:
    if e.track != PHASES_TRACK:
        return e.track
    if e.cat in ("micro-batch", "unit"):
        return e.cat
    return "phase"


def _fits(text: str, width_ms: float, span_ms: float) -> bool:
    return width_ms / span_ms * _AXES_WIDTH_IN > 0.058 * len(text) + 0.05


def _draw_row(ax, row: TimelineRow, lanes: list[tuple[str, str]], span: float) -> set[str]:
    """Draws one case; returns the labels of the phases it used (for the legend)."""
    index = {key: i for i, (key, _) in enumerate(lanes)}
    min_w = span * MIN_WIDTH
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}
    used: set[str] = set()
    unit_count = 0
    for e in sorted(row.timeline.events, key=lambda e: e.start_ms):
        lane = _lane_of(e)
        if lane not in index:
            continue
        width = max(e.dur_ms, min_w)
        if lane == "micro-batch":
            letter = e.name.split()[-1] if e.name.split()[-1] in MICRO_BATCH else "?"
            color = MICRO_BATCH.get(letter, "#8C8C8C")
            number = e.name.split()[1] if len(e.name.split()) > 2 else ""
            text = f"micro-batch {number} · {letter}"
            if not _fits(text, width, span):
                text = letter
            if _fits(text, width, span):
                ax.text(e.start_ms + width / 2, index[lane], text, ha="center", va="center", fontsize=6.5,
                        color="white" if letter == "S" else "black", clip_on=True)
        elif lane == "unit":
            color = UNIT_SHADES[unit_count % 2]
            unit_count += 1
            parts = e.name.split()
            text = f"u{parts[1]}" if len(parts) > 1 else ""
            if text and _fits(text, width, span):
                ax.text(e.start_ms + width / 2, index[lane], text, ha="center", va="center", fontsize=5.5,
                        color="#555555", clip_on=True)
        else:
            phase = phase_of(e)
            color = phase.color
            used.add(phase.label)
        bars.setdefault((index[lane], color), []).append((e.start_ms, width))
    for (y, color), spans in bars.items():
        if lanes[y][0] in ("micro-batch", "unit"):
            edge = "white"  # neighbours touch: a white gap between them
        else:
            edge = _darker(color)  # a darker rim keeps short and pale ops (CPU add, H2D) visible
        ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=color, edgecolors=edge, linewidth=0.5)
    return used


def _darker(color: str, factor: float = 0.7) -> tuple[float, float, float]:
    r, g, b = to_rgb(color)
    return (r * factor, g * factor, b * factor)


def _title(row: TimelineRow) -> tuple[str, str, str]:
    """(left title, its colour, right title)."""
    tl = row.timeline
    where = f"step {tl.step}" + (f" of rank {tl.rank}" if tl.rank != 0 else "") + f" · {tl.dur_ms:,.1f} ms"
    if tl.gpu and tl.traced_steps > 1:
        where = f"median of {tl.traced_steps} steps: " + where
    if row.status == "wrong":
        err = f" (max_rel_err {fmt_err(row.max_rel_err)})" if row.max_rel_err is not None else ""
        return f"{row.label} — WRONG{err}", WRONG, where
    if row.status == "error":
        return f"{row.label} — failed with an error", ERROR, where
    if row.status == "missing":
        return f"{row.label} — not in the run JSON (correctness unknown)", "#555555", where
    if row.status == "unknown":
        return f"{row.label} — no oracle result", "#555555", where
    return row.label, "black", where


@styled
def plot_timeline(panels: list[TimelinePanel], path: Path, title: str, time_label: str) -> Path:
    """Per panel (a schedule), one row per case, in ms from the step's start.

    GPU steps (on_gpu_time): the median traced step of rank 0 on the GPU's time, lanes compute,
    comm, copy stream and host tasks with the backend's ops coloured by phase as in the step-time
    plot; every row has its own time axis. Older traces: the first measured step of rank 0 on an
    axis shared by the panel, lanes the micro-batches (dark S = sync, light n = no-sync), the units,
    the phases (NVTX ranges), then the host's and streams' tracks; the title says it is an old trace.
    A black line marks the step's end; WRONG cases have a red title and a pink background. Events
    shorter than MIN_WIDTH of the axis are drawn that wide."""
    panels = [p for p in panels if p.rows]
    gpu = on_gpu_time(panels)
    lanes = _lanes(panels)
    lane_h = 0.27 if gpu else 0.15
    label_size = 8 if gpu else 6.5
    row_h = lane_h * len(lanes) + (0.62 if gpu else 0.36)
    heights = [row_h * len(p.rows) + 0.75 for p in panels]
    fig = new_figure(_AXES_WIDTH_IN + 2.2, sum(heights) + 1.6)
    subfigs = fig.subfigures(len(panels), 1, height_ratios=heights, squeeze=False)[:, 0]
    used: set[str] = set()
    for sub, panel in zip(subfigs, panels):
        # A GPU step's axis is its own, so a short step is not a sliver beside a long one.
        axes = sub.subplots(len(panel.rows), 1, sharex=not gpu, squeeze=False)[:, 0]
        shared = max(r.timeline.end_ms for r in panel.rows) * 1.01 or 1.0
        for ax, row in zip(axes, panel.rows):
            span = (row.timeline.end_ms * 1.01 or 1.0) if gpu else shared
            used |= _draw_row(ax, row, lanes, span)
            ax.axvline(row.timeline.dur_ms, color="black", linewidth=1.3)
            left, color, right = _title(row)
            ax.set_title(left, loc="left", fontsize=8.5, color=color, pad=2,
                         fontweight="bold" if row.status == "wrong" else "normal")
            ax.set_title(right, loc="right", fontsize=7.5, color="#555555", pad=2)
            if row.status in ("wrong", "error"):
                ax.set_facecolor(WRONG_BACKGROUND if row.status == "wrong" else ERROR_BACKGROUND)
            ax.set_yticks(range(len(lanes)), [label for _, label in lanes], fontsize=label_size)
            ax.set_ylim(len(lanes) - 0.5, -0.5)
            ax.tick_params(axis="y", length=0, pad=2)
            ax.tick_params(axis="x", labelsize=7.5)
            ax.grid(axis="y", visible=False)
            ax.grid(axis="x", alpha=0.35)
            ax.spines["left"].set_visible(False)
            if gpu:
                ax.set_xlim(0, span)
        if not gpu:
            axes[0].set_xlim(0, shared)
            # The scale on top too, so a tall panel reads without scrolling to its bottom.
            axes[0].tick_params(axis="x", labeltop=True, top=True, labelsize=7.5)
        axes[-1].set_xlabel(f"ms from the step's start ({time_label})"
                            + ("; each case on its own scale" if gpu else ""))
        sub.suptitle(panel.title, fontsize=11, fontweight="bold", x=0.01, ha="left")
    letters = {e.name.split()[-1] for p in panels for r in p.rows for e in r.timeline.on(PHASES_TRACK, "micro-batch")}
    handles = [Patch(color=MICRO_BATCH[k], label=f"{k} micro-batch ({'sync' if k == 'S' else 'no-sync'})")
               for k in ("S", "n") if k in letters]
    handles += [Patch(color=p.color, label=p.label) for p in PHASES + (OTHER_OP,) if p.label in used]
    handles.append(Line2D([], [], color="black", linewidth=1.3, label="end of the step"))
    if any(r.status == "wrong" for p in panels for r in p.rows):
        handles.append(Patch(facecolor=WRONG_BACKGROUND, edgecolor=WRONG, label="WRONG result"))
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 6), fontsize=8.5)
    if gpu:
        head = "the median step" if _several_steps(panels) else "one step"
        fig.suptitle(f"Timeline of {head} — {title}\n{drawn_step(panels)} of each case on rank 0, from "
                     f"the backend's stream tracks ({time_label}); each case on its own scale")
    else:
        fig.suptitle(f"Timeline of one step — {title}\nthe first measured step of each case on rank 0, from the "
                     f"trace; {time_label}\n{OLD_TRACE_NOTE}")
    return save(fig, path)
