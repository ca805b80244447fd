"""Peak device memory against step time: which strategy to pick under a memory budget."""

from __future__ import annotations

from pathlib import Path

from matplotlib.lines import Line2D
from matplotlib.transforms import offset_copy

from .. import analysis
from ..case import registry_of
from ..counters import PEAK_DEVICE, STEP
from ..loading import Case
from .style import (
    WRONG,
    byte_scale,
    new_figure,
    save,
    strategy_color,
    strategy_legend,
    strategy_marker,
    styled,
    wrong_handle,
)


def _short(c: Case) -> str:
    s = c.key.strategy
    return s.preset or s.label


def _label_groups(front, xs: list[float], ys: list[float]) -> list[tuple[list[str], float, float]]:
    """Front points that sit on one spot (within 2% of the panel's spans) share one label, one name a
    line, so that ties (e.g. both bindings of the same offload) do not print over each other."""
    x_span = (max(xs) - min(xs)) or max(abs(max(xs)), 1e-9)
    y_span = (max(ys) - min(ys)) or max(abs(max(ys)), 1e-9)
    groups: list[tuple[list[str], float, float]] = []
    for p, x, y in zip(front, xs, ys):
        for names, gx, gy in groups:
            if abs(x - gx) <= 0.02 * x_span and abs(y - gy) <= 0.02 * y_span:
                names.append(_short(p.case))
                break
        else:
            groups.append(([_short(p.case)], x, y))
    return groups


DODGE_POINTS = 7.0  # horizontal distance between markers that share one spot, in points


def _span(values: list[float]) -> float:
    return (max(values) - min(values)) or max(abs(max(values)), 1e-9)


def _spot_members(xs: list[float], ys: list[float], spans: tuple[float, float] | None = None) -> list[list[int]]:
    """Indices of the points on one spot (within 2% of the spans, as _label_groups; default: the
    points' own), spot by spot."""
    if not xs:
        return []
    x_span, y_span = spans or (_span(xs), _span(ys))
    spots: list[tuple[float, float, list[int]]] = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        for gx, gy, members in spots:
            if abs(x - gx) <= 0.02 * x_span and abs(y - gy) <= 0.02 * y_span:
                members.append(i)
                break
        else:
            spots.append((x, y, [i]))
    return [members for _, _, members in spots]


def dodge_offsets(xs: list[float], ys: list[float], spans: tuple[float, float] | None = None) -> list[float]:
    """A horizontal offset (points) per marker so that markers on one spot sit side by side around it,
    DODGE_POINTS apart, instead of on top of each other; a marker alone keeps offset 0."""
    offsets = [0.0] * len(xs)
    for members in _spot_members(xs, ys, spans):
        for j, i in enumerate(members):
            offsets[i] = (j - (len(members) - 1) / 2) * DODGE_POINTS
    return offsets


@styled
def plot_pareto(cases: list[Case], path: Path, title: str, time_label: str) -> Path | None:
    """One panel per schedule: x = peak device memory per rank (binary units), y = step time (ms).
    Colour = offload, marker = binding/mode; wrong results are vermillion crosses and never on the
    front; markers on one spot (wrong ones too) are set side by side (dodge_offsets); the
    Pareto front of correct cases is a dashed staircase with its points ringed and named.
    Returns None when no case has both peak_device_bytes and step_ms."""
    usable = [c for c in cases if c.value(PEAK_DEVICE.counter) is not None and c.value(STEP) is not None]
    if not usable:
        return None
    scale, unit = byte_scale(max(c.value(PEAK_DEVICE.counter) for c in usable))
    per_schedule = analysis.by_schedule(usable)
    n = len(per_schedule)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig = new_figure(5.2 * cols + 2.6, 4.0 * rows + 0.8)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    for ax, (schedule, group) in zip(axes, per_schedule.items()):
        # Markers on one spot are set side by side, wrong ones too (each is a case); correct ones on top.
        spans = (_span([c.value(PEAK_DEVICE.counter) / scale for c in group]), _span([c.value(STEP) for c in group]))
        offsets = dict(zip((c.key for c in group), dodge_offsets(
            [c.value(PEAK_DEVICE.counter) / scale for c in group], [c.value(STEP) for c in group], spans)))
        for c in group:
            where = offset_copy(ax.transData, fig=fig, x=offsets[c.key], y=0, units="points")
            x, y = c.value(PEAK_DEVICE.counter) / scale, c.value(STEP)
            if c.status == "wrong":
                ax.plot(x, y, marker="X", color=WRONG, markersize=8, linestyle="", zorder=3, transform=where,
                        markeredgecolor="white", markeredgewidth=0.5)
            else:
                marker, _ = strategy_marker(c.key.strategy)
                ax.plot(x, y, marker=marker, linestyle="", markersize=7, color=strategy_color(c.key.strategy),
                        markeredgecolor="white", markeredgewidth=0.6, zorder=4, transform=where)
        front = analysis.pareto_front(group)
        if front:
            xs = [p.memory_bytes / scale for p in front]
            ys = [p.step_ms for p in front]
            ax.step(xs, ys, where="post", color="black", linestyle="--", linewidth=1.1, zorder=2)
            for p, x, y in zip(front, xs, ys):  # the ring around the point's own (dodged) marker
                ax.plot(x, y, marker="o", markersize=14, markerfacecolor="none", markeredgecolor="black", zorder=5,
                        transform=offset_copy(ax.transData, fig=fig, x=offsets.get(p.case.key, 0.0), y=0,
                                              units="points"))
            for i, (names, x, y) in enumerate(_label_groups(front, xs, ys)):
                ax.annotate("\n".join(names), (x, y), xytext=(10, 6 + 9 * (i % 2)),
                            textcoords="offset points", fontsize=8, zorder=5,
                            bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.8))
        ax.set_title(registry_of(cases).schedule_display(schedule))
        ax.set_xlabel(f"peak device memory per rank ({unit})")
        ax.set_ylabel(f"step time (ms, {time_label})")
        # Memory from 0 (a budget is an amount); time zoomed to the cases, so the front reads clearly.
        ax.set_xlim(0, max(c.value(PEAK_DEVICE.counter) for c in group) / scale * 1.3 or 1.0)
        steps = [c.value(STEP) for c in group]
        pad = max((max(steps) - min(steps)) * 0.15, max(steps) * 0.02, 1e-6)
        ax.set_ylim(max(0.0, min(steps) - pad), max(steps) + 2 * pad)
    handles = strategy_legend([c.key.strategy for c in usable])
    handles.append(wrong_handle("WRONG result (never on the front)"))
    handles.append(Line2D([], [], color="black", linestyle="--", marker="o", markerfacecolor="none",
                          markersize=10, label="Pareto front (correct cases)"))
    fig.legend(handles=handles, loc="outside right center")
    fig.suptitle(f"Memory against step time — {title}\nlower-left is better; under a device-memory budget, "
                 f"pick the lowest front point left of it; markers on one spot are set side by side, {DODGE_POINTS:g} pt "
                 "apart")
    return save(fig, path)
