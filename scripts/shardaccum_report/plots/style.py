"""Shared look of the plots: the Agg backend, fonts, colours of strategies and results, byte units,
and saving a figure."""

from __future__ import annotations

import functools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from ..case import BINDINGS, MODES, OFFLOADS, Strategy  # noqa: E402

RC = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "savefig.dpi": 110,
}

WRONG = "#D62728"        # red: a wrong result, everywhere
ERROR = "#8C8C8C"        # grey: the case ended with an error
CORRECT = "#7FBF7B"      # green: correct
UNKNOWN = "#F6E8A6"      # pale yellow: no correct counter
MEASURED = "#2B5C8A"
PREDICTED = "#D9D9D9"
MISMATCH = "#B35806"     # dark orange: measured differs from predicted

OFFLOAD_COLORS = {"none": "#4D4D4D", "gpu-add": "#0072B2", "cpu-add": "#009E73", "copy": "#E69F00"}
BINDING_MODE_STYLE = {  # (marker, line style)
    ("data", "flag"): ("o", "-"),
    ("data", "shape"): ("s", "--"),
    ("data-free", "flag"): ("^", "-."),
    ("data-free", "shape"): ("D", ":"),
}


def styled(fn):
    """Runs a plot function under the shared rcParams."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(RC):
            return fn(*args, **kwargs)
    return wrapper


def new_figure(width: float, height: float) -> Figure:
    """A figure of width x height inches, not registered with pyplot (no global state, no leak)."""
    return Figure(figsize=(width, height), layout="constrained")


def save(fig: Figure, path: Path) -> Path:
    """Writes the figure as PNG (no timestamp or version metadata, so reruns give the same bytes)."""
    fig.savefig(path, format="png", bbox_inches="tight", pad_inches=0.15, metadata={"Software": None})
    return path


def byte_scale(max_bytes: float) -> tuple[float, str]:
    """The divisor and binary unit for an axis of bytes: (2**30, 'GiB'), (2**20, 'MiB'), ... ."""
    for power, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if max_bytes >= 2 ** power:
            return float(2 ** power), unit
    return 1.0, "B"


def strategy_color(s: Strategy) -> str:
    return OFFLOAD_COLORS.get(s.offload, "#984EA3")


def strategy_marker(s: Strategy) -> tuple[str, str]:
    return BINDING_MODE_STYLE.get((s.binding, s.mode), ("P", (0, (1, 3))))


def strategy_legend(strategies: list[Strategy], lines: bool = False) -> list:
    """A compact legend: one entry per offload (colour) and per binding/mode (marker, line style)
    instead of one per strategy."""
    offloads = sorted({s.offload for s in strategies}, key=lambda o: OFFLOADS.index(o) if o in OFFLOADS else 9)
    pairs = sorted({(s.binding, s.mode) for s in strategies},
                   key=lambda p: (BINDINGS.index(p[0]) if p[0] in BINDINGS else 9,
                                  MODES.index(p[1]) if p[1] in MODES else 9))
    colors = [OFFLOAD_COLORS.get(o, "#984EA3") for o in offloads]
    if lines:
        handles = [Line2D([], [], color=c, linewidth=3, label=f"offload {o}") for o, c in zip(offloads, colors)]
    else:
        handles = [Patch(color=c, label=f"offload {o}") for o, c in zip(offloads, colors)]
    for binding, mode in pairs:
        marker, ls = BINDING_MODE_STYLE.get((binding, mode), ("P", ":"))
        handles.append(Line2D([], [], color="#555555", marker=marker, linestyle=ls if lines else "",
                              markersize=7, label=f"{binding} / {mode}"))
    return handles


def wrong_handle(label: str = "WRONG result") -> Line2D:
    return Line2D([], [], color=WRONG, marker="X", linestyle="", markersize=9, label=label)
