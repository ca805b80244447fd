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

from ..case import Strategy  # noqa: E402

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

# Okabe-Ito (Okabe & Ito 2008, "Color Universal Design"): told apart under the common colour-vision
# deficiencies. Every plot takes its colours from here (phases: counters.PHASES, the same palette).
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky blue": "#56B4E9", "bluish green": "#009E73",
             "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "reddish purple": "#CC79A7"}
WRONG = OKABE_ITO["vermillion"]      # a wrong result, everywhere
ERROR = "#8C8C8C"                    # grey: the case ended with an error
CORRECT = OKABE_ITO["sky blue"]      # correct (blue against vermillion, not green against red)
UNKNOWN = OKABE_ITO["yellow"]        # no correct counter
MEASURED = OKABE_ITO["blue"]
PREDICTED = "#D9D9D9"
MISMATCH = OKABE_ITO["orange"]       # measured differs from predicted
NEUTRAL = "#8C8C8C"                  # a remark on missing or zero data
TIE = OKABE_ITO["reddish purple"]    # cases whose spreads overlap: no ranking claimed
BOUND = OKABE_ITO["black"]           # the oracle's error bound

# Styles by a value's position in the registry's order (so a new value gets one without an edit
# here): today's none, gpu-add, cpu-add, copy take the first four colours; today's binding x mode
# pairs (data/flag, data/shape, data-free/flag, data-free/shape) the first four markers.
OFFLOAD_PALETTE = ("#4D4D4D", OKABE_ITO["blue"], OKABE_ITO["bluish green"], OKABE_ITO["orange"],
                   OKABE_ITO["sky blue"], OKABE_ITO["reddish purple"], OKABE_ITO["yellow"], OKABE_ITO["black"],
                   # Okabe-Ito has no ninth colour besides vermillion (WRONG): Paul Tol's muted
                   # wine, teal and olive, also told apart under colour-vision deficiencies.
                   "#882255", "#44AA99", "#999933")
# The first values keep the colours the committed reference PNGs were drawn with, wherever a later
# value (gpu-add-pipelined after gpu-add) sits in the report order; the others follow in that order.
FIRST_OFFLOADS = ("none", "gpu-add", "cpu-add", "copy")
UNKNOWN_OFFLOAD = "#B0B0B0"  # a value the registry does not list
MARKER_PALETTE = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("P", "--"), ("*", "-."),
                  ("h", ":"))
UNKNOWN_MARKER = ("P", (0, (1, 3)))
# The axes a marker tells apart (colour tells offload apart), in the order of their combinations.
MARKER_AXES = ("binding", "mode", "division")


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
    """The colour of the strategy's offload: FIRST_OFFLOADS their own, then the palette entry at the
    value's position among the registry's other values; UNKNOWN_OFFLOAD for a value it lacks."""
    names = s.registry.axis("offload").names
    if s.offload not in names:
        return UNKNOWN_OFFLOAD
    order = [n for n in FIRST_OFFLOADS if n in names] + [n for n in names if n not in FIRST_OFFLOADS]
    return OFFLOAD_PALETTE[order.index(s.offload) % len(OFFLOAD_PALETTE)]


def _shell_index(coords: list[int]) -> int:
    """A position for a point of N^d that never moves when an axis gains a value at its end: the
    points are ordered shell by shell (shell k: the largest coordinate is k), so today's 2x2
    binding/mode combinations keep indices 0..3 whatever is appended to either axis later."""
    k = max(coords)
    if k == 0:
        return 0
    d = len(coords)
    # Points of earlier shells: k^d; within shell k, enumerate the points of {0..k}^d with max = k in
    # lexicographic order (the first axis slowest).
    before = k ** d
    rank = 0
    for i, c in enumerate(coords):
        rest = d - i - 1
        for v in range(c):
            # completions of the remaining axes that keep the point in shell k
            seen_k = v == k or any(x == k for x in coords[:i])
            rank += (k + 1) ** rest if seen_k else (k + 1) ** rest - k ** rest
    return before + rank


def _marker_index(s: Strategy) -> int | None:
    """Position of the strategy's (binding, mode, division) among the registry's combinations, stable
    when a value is appended to an axis (_shell_index)."""
    coords = []
    # division first (slowest): at its default (0) the binding/mode pairs keep today's 0..3.
    for axis in ("division", "binding", "mode"):
        names = s.registry.axis(axis).names
        value = getattr(s, axis)
        if value not in names:
            return None
        coords.append(names.index(value))
    return _shell_index(coords)


def strategy_marker(s: Strategy) -> tuple[str, str]:
    """(marker, line style) of the strategy's binding/mode/division combination."""
    index = _marker_index(s)
    return UNKNOWN_MARKER if index is None else MARKER_PALETTE[index % len(MARKER_PALETTE)]


def _marker_label(s: Strategy) -> str:
    label = f"{s.binding} / {s.mode}"
    return label if s.division == s.registry.axis("division").default else f"{label} / {s.division}"


def strategy_legend(strategies: list[Strategy], lines: bool = False) -> list:
    """A compact legend: one entry per offload (colour) and per binding/mode (marker, line style)
    instead of one per strategy, in the registry's order."""
    by_offload = {}
    for s in sorted(strategies, key=lambda s: s.sort_key):
        by_offload.setdefault(s.offload, s)
    by_marker = {}
    for s in sorted(strategies, key=lambda s: (_marker_index(s) is None, _marker_index(s) or 0, s.sort_key)):
        by_marker.setdefault(_marker_label(s), s)
    if lines:
        handles = [Line2D([], [], color=strategy_color(s), linewidth=3, label=f"offload {o}")
                   for o, s in by_offload.items()]
    else:
        handles = [Patch(color=strategy_color(s), label=f"offload {o}") for o, s in by_offload.items()]
    for label, s in by_marker.items():
        marker, ls = strategy_marker(s)
        handles.append(Line2D([], [], color="#555555", marker=marker, linestyle=ls if lines else "",
                              markersize=7, label=label))
    return handles


def wrong_handle(label: str = "WRONG result") -> Line2D:
    return Line2D([], [], color=WRONG, marker="X", linestyle="", markersize=9, label=label)
