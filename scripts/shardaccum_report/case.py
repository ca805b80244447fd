"""A case's identity: the key:value parts of a benchmark name (docs/DESIGN.md §7), strategies and schedules.

A name looks like
``accum/model:llama2-7b/world:2/schedule:nSnS/binding:data/offload:cpu-add/mode:flag/dtype:fp32-fp32-fp32``;
Google Benchmark may append its own parts (``manual_time``, ``iterations:3``, ``repeats:2``, ...),
which are not part of the case. Unknown key:value parts are kept, so a later axis still tells cases apart.
Which parts a name has, their order and defaults come from the run's registry (registry.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .registry import STRATEGY_AXES, Registry

CASE_PREFIX = "accum"
# Parts that Google Benchmark appends to a registered name (UseManualTime, Iterations, Repetitions, ...).
GBENCH_WORDS = frozenset({"manual_time", "real_time", "process_time"})
GBENCH_KEYS = frozenset({"iterations", "repeats", "threads", "min_time", "min_warmup_time"})


def _registry() -> Registry:
    """The registry of a strategy or key built by hand (not parsed from a run): the committed one."""
    return Registry.committed()


@dataclass(frozen=True)
class Strategy:
    """The binding/offload/mode/division values of docs/DESIGN.md §3. `registry` (not part of the
    identity) is the one of the run the strategy came from: it names presets and orders strategies."""

    binding: str
    offload: str
    mode: str
    division: str = "end"
    registry: Registry = field(default_factory=_registry, compare=False, repr=False)
    # The lookahead the name chose (/lookahead:V), else None (the strategy's default). Not part of the
    # identity (the case key's extra carries it); it decides whether the values are their preset.
    lookahead: str | None = field(default=None, compare=False, repr=False)
    # The copy-in the name gave (/copy-in:C), else None (`none`): part of the identity and of the
    # label, as the strategy's fifth value (a copy-in does not make another group of plots), and it
    # decides whether the values are their preset.
    copy_in: str | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.copy_in == "none":  # the default, spelled out: the same strategy as leaving it out
            object.__setattr__(self, "copy_in", None)

    @property
    def label(self) -> str:
        """'binding/offload/mode', e.g. 'data-free/cpu-add/flag'; a division other than its default
        is appended ('.../flag/each'), then a copy-in other than none ('.../collective/chunk-cat')."""
        parts = [self.binding, self.offload, self.mode]
        if self.division != self.registry.axis("division").default:
            parts.append(self.division)
        if self.copy_in:
            parts.append(self.copy_in)
        return "/".join(parts)

    @property
    def preset(self) -> str | None:
        """The real system these values are (fairscale, fsdp1, fsdp2, zero3), or None."""
        return self.registry.preset_of(self)

    @property
    def display(self) -> str:
        """The label with its preset, e.g. 'data-free/cpu-add/flag (fsdp2)'."""
        return f"{self.label} ({self.preset})" if self.preset else self.label

    @property
    def sort_key(self) -> tuple:
        """Report order: offload, then binding, mode and division, each in the registry's order."""
        return self.registry.strategy_sort_key(self)


def registry_of(cases) -> Registry:
    """The registry of a list of cases (from the first one's key): what plots and tables order by."""
    for c in cases:
        return c.key.registry
    return Registry.committed()


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
    dtype: str = ""
    extra: tuple[tuple[str, str], ...] = field(default=())
    registry: Registry = field(default_factory=_registry, compare=False, repr=False)

    def __post_init__(self):
        if not self.dtype:  # a key built by hand without a dtype: the registry's default
            object.__setattr__(self, "dtype", self.registry.default_dtype)

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
        """The case's group; its copy-in is the strategy's (in its label), not another group."""
        return Group(self.model, self.world, self.k, self.dtype,
                     tuple((k, v) for k, v in self.extra if k != "copy-in"))

    @property
    def name(self) -> str:
        """The canonical benchmark name of this case (without Google Benchmark's suffixes)."""
        values = {"model": self.model, "world": str(self.world), "schedule": self.schedule,
                  "dtype": self.dtype, **{a: getattr(self.strategy, a) for a in STRATEGY_AXES}}
        parts = [CASE_PREFIX] + self.registry.name_values(values)
        parts += [f"{key}:{value}" for key, value in self.extra]
        return "/".join(parts)

    @property
    def sort_key(self) -> tuple:
        return (self.group.sort_key, self.registry.schedule_sort_key(self.schedule), self.strategy.sort_key)


def parse_case_name(name: str, registry: Registry | None = None) -> CaseKey | None:
    """Parses a benchmark name into a CaseKey, by `registry` (the run's; None: the committed one).

    Returns None when the name is not an accumulation case (its first part is not 'accum').
    An axis the registry names `unless_default` that the name leaves out is at its default, and a
    missing dtype is the default dtype, so older and newer names of one case give the same key.
    Raises ValueError naming the problem when an 'accum/' name lacks an axis, repeats one, has a
    world size that is not a positive integer, or a schedule that is not n/S letters ending in S.
    """
    registry = registry or Registry.committed()
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
        if key in registry.name_parts:
            axes[key] = value
        else:
            extra.append((key, value))
    optional = {a.axis: a.default for a in registry.axes if a.named == "unless_default"}
    optional["dtype"] = registry.default_dtype
    missing = [axis for axis in registry.name_parts if axis not in axes and axis not in optional]
    if missing:
        raise ValueError(f"{name!r} lacks the axis {', '.join(missing)}")
    axes = {**optional, **axes}
    try:
        world = int(axes["world"])
    except ValueError:
        world = 0
    if world < 1:
        raise ValueError(f"world size {axes['world']!r} in {name!r} is not a positive integer")
    schedule = axes["schedule"]
    if not re.fullmatch(r"[nS]*S", schedule):
        raise ValueError(f"schedule {schedule!r} in {name!r} is not n/S letters ending in S")
    strategy = Strategy(*(axes[a] for a in STRATEGY_AXES), registry=registry,
                        lookahead=dict(extra).get("lookahead"), copy_in=dict(extra).get("copy-in"))
    return CaseKey(axes["model"], world, schedule, strategy, axes["dtype"], tuple(extra), registry)
