"""A case's identity: the key:value parts of a benchmark name (docs/DESIGN.md §7), strategies and schedules.

A name looks like
``accum/model:llama2-7b/world:2/schedule:nSnS/binding:data/offload:cpu-add/mode:flag/dtype:fp32-fp32-fp32``;
Google Benchmark may append its own parts (``manual_time``, ``iterations:3``, ``repeats:2``, ...),
which are not part of the case. Unknown key:value parts are kept, so a later axis still tells cases apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CASE_PREFIX = "accum"
REQUIRED_AXES = ("model", "world", "schedule", "binding", "offload", "mode")
KNOWN_AXES = REQUIRED_AXES + ("dtype",)
# Parts that Google Benchmark appends to a registered name (UseManualTime, Iterations, Repetitions, ...).
GBENCH_WORDS = frozenset({"manual_time", "real_time", "process_time"})
GBENCH_KEYS = frozenset({"iterations", "repeats", "threads", "min_time", "min_warmup_time"})

BINDINGS = ("data", "data-free")
OFFLOADS = ("none", "gpu-add", "cpu-add", "copy")
MODES = ("flag", "shape")
CANONICAL_SCHEDULES = ("no-sync", "sync", "interleaved-nosync-last", "interleaved-sync-last")
DEFAULT_DTYPE = "fp32-fp32-fp32"


def _order(value: str, known: tuple[str, ...]) -> tuple[int, str]:
    return (known.index(value), "") if value in known else (len(known), value)


@dataclass(frozen=True)
class Strategy:
    """The binding/offload/mode triple of docs/DESIGN.md §3."""

    binding: str
    offload: str
    mode: str

    @property
    def label(self) -> str:
        """'binding/offload/mode', e.g. 'data-free/cpu-add/flag'."""
        return f"{self.binding}/{self.offload}/{self.mode}"

    @property
    def preset(self) -> str | None:
        """The real system this triple is (fairscale, fsdp1, fsdp2, zero3), or None."""
        for name, strategy in PRESETS.items():
            if strategy == self:
                return name
        return None

    @property
    def display(self) -> str:
        """The label with its preset, e.g. 'data-free/cpu-add/flag (fsdp2)'."""
        return f"{self.label} ({self.preset})" if self.preset else self.label

    @property
    def sort_key(self) -> tuple:
        """Report order: offload (none, gpu-add, cpu-add, copy), then binding, then mode."""
        return (_order(self.offload, OFFLOADS), _order(self.binding, BINDINGS), _order(self.mode, MODES))


PRESETS = {
    "fairscale": Strategy("data", "copy", "shape"),
    "fsdp1": Strategy("data-free", "copy", "shape"),
    "fsdp2": Strategy("data-free", "cpu-add", "flag"),
    "zero3": Strategy("data-free", "gpu-add", "flag"),
}


def canonical_schedule(name: str, k: int) -> str:
    """The n/S string of canonical schedule `name` for K micro-batches, as strategies/schedule.cpp builds it.

    Raises ValueError for an unknown name or K < 3.
    """
    if name not in CANONICAL_SCHEDULES:
        raise ValueError(f"unknown canonical schedule {name!r}; known: {', '.join(CANONICAL_SCHEDULES)}")
    if k < 3:
        raise ValueError(f"canonical schedule {name!r} needs K >= 3, got {k}")
    if name == "no-sync":
        return "n" * (k - 1) + "S"
    if name == "sync":
        return "S" * k
    at_km2 = "n" if name == "interleaved-nosync-last" else "S"
    other = "S" if at_km2 == "n" else "n"
    return "".join(at_km2 if (k - 2 - i) % 2 == 0 else other for i in range(k - 1)) + "S"


def schedule_family(schedule: str) -> str:
    """The canonical name a literal schedule has for its K ('no-sync', 'sync', ...), else 'other'."""
    k = len(schedule)
    if k >= 3:
        for name in CANONICAL_SCHEDULES:
            if canonical_schedule(name, k) == schedule:
                return name
    elif schedule == "S" * k and k > 0:
        return "sync"
    elif schedule == "n" * (k - 1) + "S":
        return "no-sync"
    return "other"


def schedule_sort_key(schedule: str) -> tuple:
    """Report order: K, then the canonical order of docs/DESIGN.md §1, then other schedules by name."""
    return (len(schedule), _order(schedule_family(schedule), CANONICAL_SCHEDULES), schedule)


def schedule_display(schedule: str) -> str:
    """E.g. 'nSnS (interleaved-nosync-last)', or the literal string for other schedules."""
    family = schedule_family(schedule)
    return schedule if family == "other" else f"{schedule} ({family})"


@dataclass(frozen=True)
class Group:
    """Cases that share one set of plots: model, world size, K and dtype triple (and any extra axes)."""

    model: str
    world: int
    k: int
    dtype: str
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def title(self) -> str:
        """E.g. 'uniform:8x1M · world 2 · K 4 · fp32-fp32-fp32'."""
        parts = [self.model, f"world {self.world}", f"K {self.k}", self.dtype]
        parts += [f"{key} {value}" for key, value in self.extra]
        return " · ".join(parts)

    @property
    def slug(self) -> str:
        """A file-name-safe form of the title, e.g. 'uniform-8x1M_w2_k4_fp32-fp32-fp32'."""
        parts = [self.model, f"w{self.world}", f"k{self.k}", self.dtype] + [f"{k}-{v}" for k, v in self.extra]
        return re.sub(r"[^A-Za-z0-9.-]+", "-", "_".join(parts).replace(":", "-")).strip("-")

    @property
    def sort_key(self) -> tuple:
        return (self.model, self.dtype, self.extra, self.world, self.k)


@dataclass(frozen=True)
class CaseKey:
    """The identity of a case: its axes from the benchmark name (repetitions and GB suffixes excluded)."""

    model: str
    world: int
    schedule: str
    strategy: Strategy
    dtype: str = DEFAULT_DTYPE
    extra: tuple[tuple[str, str], ...] = field(default=())

    @property
    def k(self) -> int:
        """Micro-batches per optimizer step: the schedule's length."""
        return len(self.schedule)

    @property
    def sync_count(self) -> int:
        """s of docs/DESIGN.md §3: the number of S micro-batches."""
        return self.schedule.count("S")

    @property
    def group(self) -> Group:
        return Group(self.model, self.world, self.k, self.dtype, self.extra)

    @property
    def name(self) -> str:
        """The canonical benchmark name of this case (without Google Benchmark's suffixes)."""
        s = self.strategy
        parts = [CASE_PREFIX, f"model:{self.model}", f"world:{self.world}", f"schedule:{self.schedule}",
                 f"binding:{s.binding}", f"offload:{s.offload}", f"mode:{s.mode}", f"dtype:{self.dtype}"]
        parts += [f"{key}:{value}" for key, value in self.extra]
        return "/".join(parts)

    @property
    def sort_key(self) -> tuple:
        return (self.group.sort_key, schedule_sort_key(self.schedule), self.strategy.sort_key)


def parse_case_name(name: str) -> CaseKey | None:
    """Parses a benchmark name into a CaseKey.

    Returns None when the name is not an accumulation case (its first part is not 'accum').
    Raises ValueError naming the problem when an 'accum/' name lacks an axis, repeats one, has a
    world size that is not a positive integer, or a schedule that is not n/S letters ending in S.
    """
    parts = name.split("/")
    if parts[0] != CASE_PREFIX:
        return None
    axes: dict[str, str] = {}
    extra: list[tuple[str, str]] = []
    for part in parts[1:]:
        if part in GBENCH_WORDS or not part:
            continue
        key, sep, value = part.partition(":")
        if not sep:
            raise ValueError(f"part {part!r} of {name!r} is not key:value")
        if key in GBENCH_KEYS:
            continue
        if key in axes or any(key == k for k, _ in extra):
            raise ValueError(f"axis {key!r} appears twice in {name!r}")
        if key in KNOWN_AXES:
            axes[key] = value
        else:
            extra.append((key, value))
    missing = [axis for axis in REQUIRED_AXES if axis not in axes]
    if missing:
        raise ValueError(f"{name!r} lacks the axis {', '.join(missing)}")
    try:
        world = int(axes["world"])
    except ValueError:
        world = 0
    if world < 1:
        raise ValueError(f"world size {axes['world']!r} in {name!r} is not a positive integer")
    schedule = axes["schedule"]
    if not re.fullmatch(r"[nS]*S", schedule):
        raise ValueError(f"schedule {schedule!r} in {name!r} is not n/S letters ending in S")
    strategy = Strategy(axes["binding"], axes["offload"], axes["mode"])
    return CaseKey(axes["model"], world, schedule, strategy, axes.get("dtype", DEFAULT_DTYPE), tuple(extra))
