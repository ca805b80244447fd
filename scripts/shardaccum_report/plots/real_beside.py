"""Real systems beside their presets: grouped bars, real and preset, per schedule × offload."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.patches import Patch

from ..pairing import Pair
from .style import OKABE_ITO, WRONG, new_figure, save, styled

REAL = OKABE_ITO["reddish purple"]  # the real system, in every real-beside-preset plot (vermillion is WRONG)
PRESET = OKABE_ITO["blue"]          # the suite's preset case


def _fmt(value: float, unit: str) -> str:
    if unit == "bytes":
        for power, name in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
            if value >= 2 ** power:
                return f"{value / 2 ** power:.3g} {name}"
        return f"{value:.0f} B"
    return f"{value:.3g}"


def _bar(ax, x: float, value: float | None, color: str, wrong: bool, unit: str, bottom: float) -> None:
    """One bar with its value above it; '0' or 'none' printed at the floor where a log axis cannot draw it."""
    if value is None or value <= 0:
        ax.text(x, bottom, "0" if value == 0 else "none", ha="center", va="bottom", fontsize=7, color=color,
                rotation=90)
        return
    ax.bar(x, value, width=0.38, color=color, edgecolor=WRONG if wrong else color, linewidth=2 if wrong else 0,
           hatch="//" if wrong else None)
    ax.text(x, value * 1.08, _fmt(value, unit), ha="center", va="bottom", fontsize=7, rotation=90)


@styled
def plot_real_beside(pairs: list[Pair], metric: str, unit: str, path: Path, title: str, ylabel: str) -> Path | None:
    """One panel per system; bars of `metric` (real, preset) at each schedule × offload, log y-axis.

    A WRONG case is hatched with a red edge; a preset case missing from the inputs reads 'none'.
    Returns None when no real case has the metric."""
    if not any(p.real.value(metric) is not None for p in pairs):
        return None
    systems = list(dict.fromkeys(p.key.system for p in pairs))
    values = [v for p in pairs for v in (p.real.value(metric), p.preset.value(metric) if p.preset else None)
              if v is not None and v > 0]
    bottom = min(values) / 4 if values else 1.0
    top = max(values) * 8 if values else 10.0
    width = max(len([p for p in pairs if p.key.system == s]) for s in systems)
    fig = new_figure(1.0 * width + 2.5, 3.4 * len(systems) + 0.8)
    axes = np.atleast_1d(fig.subplots(len(systems), 1, squeeze=False).ravel())
    for ax, system in zip(axes, systems):
        mine = [p for p in pairs if p.key.system == system]
        for i, p in enumerate(mine):
            _bar(ax, i - 0.2, p.real.value(metric), REAL, p.real.status == "wrong", unit, bottom)
            preset = p.preset.value(metric) if p.preset else None
            _bar(ax, i + 0.2, preset, PRESET, bool(p.preset and p.preset.status == "wrong"), unit, bottom)
        ax.set_yscale("log")
        ax.set_ylim(bottom, top)
        ax.set_xticks(range(len(mine)), [f"{p.key.schedule}\noffload {p.key.offload}" for p in mine])
        mapped = {p.key.offload: p.preset_key.strategy.label for p in mine if p.preset_key}
        mapping = "; ".join(f"offload {o} → {label}" for o, label in mapped.items())
        ax.set_title(f"real {system} beside preset {system} ({mapping})" if mapping else
                     f"real {system}, shown alone: the registry has no preset {system}")
        ax.set_ylabel(ylabel)
    handles = [Patch(color=REAL, label="real system"), Patch(color=PRESET, label="suite preset"),
               Patch(facecolor="white", edgecolor=WRONG, hatch="//", label="WRONG result")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3)
    fig.suptitle(title)
    return save(fig, path)
