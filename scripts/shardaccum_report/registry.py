"""The registry of axis values, presets and canonical schedules that shardaccum_bench writes (schema 1).

The binary writes it into its Google Benchmark JSON's context under ``"registry"`` and alone for
``shardaccum_bench --describe-registry``; JSON that predates it is read with the committed copy,
``registry.json`` beside this file (written by scripts/regenerate_registry.sh). The report tools take
every value list, preset and schedule rule from here instead of keeping copies of bench/'s lists.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .case import Strategy

SCHEMA = 1
COMMITTED = Path(__file__).with_name("registry.json")
# The axes a Strategy has, in the order the registry lists them and the report sorts by them.
STRATEGY_AXES = ("binding", "offload", "mode", "division")
# Report order of strategies (docs/DESIGN.md §3): offload first, then binding, mode, division.
SORT_AXES = ("offload", "binding", "mode", "division")
_NAMED = ("always", "unless_default")
_LETTERS = ("n", "S")


def _get(obj: dict, key: str, kind: type | tuple, where: str):
    """obj[key], checked to be of `kind`; ValueError naming `where.key` otherwise."""
    if not isinstance(obj, dict):
        raise ValueError(f"registry: {where} is not an object")
    if key not in obj:
        raise ValueError(f"registry: {where} has no key {key!r}")
    value = obj[key]
    # bool is an int in Python: a number field must not take true/false.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ValueError(f"registry: {where}.{key} is {json.dumps(value)}, expected a {names}")
    return value


def _strings(obj: dict, key: str, where: str) -> tuple[str, ...]:
    values = _get(obj, key, list, where)
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v:
            raise ValueError(f"registry: {where}.{key}[{i}] is {json.dumps(v)}, expected a non-empty string")
    if len(set(values)) != len(values):
        raise ValueError(f"registry: {where}.{key} lists a value twice")
    return tuple(values)


@dataclass(frozen=True)
class AxisValue:
    """One registered value of an axis: its name, one-line description, what it follows, properties."""

    name: str
    description: str
    follows: str
    properties: tuple[tuple[str, object], ...]

    def property(self, key: str, default: object = None) -> object:
        return dict(self.properties).get(key, default)


@dataclass(frozen=True)
class Axis:
    """One strategy axis: its CLI flag, naming rule, default, default matrix and values in report order."""

    axis: str
    flag: str
    named: str
    default: str
    default_matrix: tuple[str, ...]
    values: tuple[AxisValue, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.values)

    def order(self, value: str) -> tuple[int, str]:
        """Sort key of a value: its position in `values`; unknown values after known ones, by name."""
        names = self.names
        return (names.index(value), "") if value in names else (len(names), value)


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    follows: str
    axes: tuple[tuple[str, str], ...]
    lookahead: str | None = None  # its registered lookahead (0, 1, unbounded); None in older registries
    copy_in: str = "none"  # what its reduce-scatter reads (the name's /copy-in:C); "none" in older ones
    # How its device adds launch under --device-add-grid auto ("torch", "two-per-sm"); None in older ones
    device_add_grid: str | None = None
    # Its comm stream's priority under --comm-priority auto ("greatest", "default"); None in older ones
    comm_priority: str | None = None
    # Host time in µs per unit's backward under --hook-host-us auto (its system's hooks); None in older ones
    hook_host_us: int | None = None


@dataclass(frozen=True)
class CanonicalSchedule:
    """A named schedule family: K-1 head letters (constant or alternating) then the tail letter."""

    name: str
    description: str
    min_k: int
    kind: str
    letter: str  # the constant letter, or the alternating head's letter at index K-2
    tail: str
    example_k4: str

    def build(self, k: int) -> str:
        """The n/S string for K micro-batches; ValueError when K < min_k."""
        if k < self.min_k:
            raise ValueError(f"canonical schedule {self.name!r} needs K >= {self.min_k}, got {k}")
        if self.kind == "constant":
            return self.letter * (k - 1) + self.tail
        other = "S" if self.letter == "n" else "n"
        return "".join(self.letter if (k - 2 - i) % 2 == 0 else other for i in range(k - 1)) + self.tail


def _axis(obj: object, i: int) -> Axis:
    where = f"axes[{i}]"
    name = _get(obj, "axis", str, where)
    where = f"axes[{i}] ({name})"
    named = _get(obj, "named", str, where)
    if named not in _NAMED:
        raise ValueError(f"registry: {where}.named is {named!r}, expected one of {', '.join(_NAMED)}")
    values = []
    for j, v in enumerate(_get(obj, "values", list, where)):
        vw = f"{where}.values[{j}]"
        props = _get(v, "properties", dict, vw)
        values.append(AxisValue(_get(v, "name", str, vw), _get(v, "description", str, vw),
                                _get(v, "follows", str, vw), tuple(sorted(props.items()))))
    axis = Axis(name, _get(obj, "flag", str, where), named, _get(obj, "default", str, where),
                _strings(obj, "default_matrix", where), tuple(values))
    if not values or len(set(axis.names)) != len(values):
        raise ValueError(f"registry: {where}.values is empty or names a value twice")
    for key, listed in (("default", (axis.default,)), ("default_matrix", axis.default_matrix)):
        unknown = [v for v in listed if v not in axis.names]
        if unknown:
            raise ValueError(f"registry: {where}.{key} names {', '.join(unknown)}, not among its values")
    return axis


def _schedule(obj: object, i: int) -> CanonicalSchedule:
    where = f"canonical_schedules[{i}]"
    head = _get(obj, "head", dict, where)
    kind = _get(head, "kind", str, where + ".head")
    if kind not in ("constant", "alternating"):
        raise ValueError(f"registry: {where}.head.kind is {kind!r}, expected constant or alternating")
    letter = _get(head, "letter" if kind == "constant" else "at_k_minus_2", str, where + ".head")
    tail = _get(obj, "tail", str, where)
    if letter not in _LETTERS or tail not in _LETTERS:
        raise ValueError(f"registry: {where}: head and tail letters must be n or S")
    s = CanonicalSchedule(_get(obj, "name", str, where), _get(obj, "description", str, where),
                          _get(obj, "min_k", int, where), kind, letter, tail, _get(obj, "example_k4", str, where))
    if s.min_k <= 4 and s.build(4) != s.example_k4:
        raise ValueError(f"registry: {where}.example_k4 is {s.example_k4!r}, but its rule builds {s.build(4)!r}")
    return s


@dataclass(frozen=True)
class Registry:
    """What shardaccum_bench registers: strategy axes, case-name parts, presets, canonical schedules,
    dtypes. Parse with from_json (strict), from_context (a run's) or committed (registry.json)."""

    axes: tuple[Axis, ...]
    name_parts: tuple[str, ...]
    presets: tuple[Preset, ...]
    canonical_schedules: tuple[CanonicalSchedule, ...]
    dtypes: tuple[str, ...]
    default_dtype: str
    max_k: int

    @staticmethod
    def from_json(obj: object) -> Registry:
        """Parses the spec's object; ValueError naming the key for anything missing, mistyped or
        inconsistent (an unknown schema, an axis out of order, a preset naming an unknown value)."""
        if _get({"registry": obj}, "registry", dict, "the context").get("schema") != SCHEMA:
            raise ValueError(f"registry: schema is {json.dumps(obj.get('schema'))}, this tool reads schema {SCHEMA}")
        axes = tuple(_axis(a, i) for i, a in enumerate(_get(obj, "axes", list, "registry")))
        if tuple(a.axis for a in axes) != STRATEGY_AXES:
            raise ValueError(f"registry: axes are {', '.join(a.axis for a in axes)}; expected "
                             f"{', '.join(STRATEGY_AXES)} in this order")
        by_axis = {a.axis: a for a in axes}
        presets = []
        for i, p in enumerate(_get(obj, "presets", list, "registry")):
            where = f"presets[{i}]"
            values = _get(p, "axes", dict, where)
            for axis, value in values.items():
                if axis not in by_axis or value not in by_axis[axis].names:
                    raise ValueError(f"registry: {where}.axes.{axis} = {json.dumps(value)} is not a registered value")
            full = tuple((a, values.get(a, by_axis[a].default)) for a in STRATEGY_AXES)
            lookahead = p.get("lookahead")
            copy_in = p.get("copy_in", "none")
            if not isinstance(copy_in, str):
                raise ValueError(f"registry: {where}.copy_in = {json.dumps(copy_in)} is not a string")
            grid = p.get("device_add_grid")
            if grid is not None and not isinstance(grid, str):
                raise ValueError(f"registry: {where}.device_add_grid = {json.dumps(grid)} is not a string")
            priority = p.get("comm_priority")
            if priority is not None and not isinstance(priority, str):
                raise ValueError(f"registry: {where}.comm_priority = {json.dumps(priority)} is not a string")
            hook = p.get("hook_host_us")
            if hook is not None and (not isinstance(hook, int) or isinstance(hook, bool) or hook < 0):
                raise ValueError(f"registry: {where}.hook_host_us = {json.dumps(hook)} is not a count of µs")
            presets.append(Preset(_get(p, "name", str, where), _get(p, "description", str, where),
                                  _get(p, "follows", str, where), full,
                                  lookahead if isinstance(lookahead, str) else None, copy_in, grid, priority,
                                  hook))
        schedules = tuple(_schedule(s, i) for i, s in enumerate(_get(obj, "canonical_schedules", list, "registry")))
        dtypes = _strings(obj, "dtypes", "registry")
        default_dtype = _get(obj, "default_dtype", str, "registry")
        if default_dtype not in dtypes:
            raise ValueError(f"registry: default_dtype {default_dtype!r} is not among dtypes")
        parts = _strings(obj, "name_parts", "registry")
        missing = [a for a in STRATEGY_AXES + ("model", "world", "schedule", "dtype") if a not in parts]
        if missing:
            raise ValueError(f"registry: name_parts lacks {', '.join(missing)}")
        max_k = _get(obj, "max_k", int, "registry")
        if max_k < 1:
            raise ValueError(f"registry: max_k is {max_k}, expected at least 1")
        names = [p.name for p in presets]
        if len(set(names)) != len(names):
            raise ValueError(f"registry: a preset name appears twice in {', '.join(names)}")
        for a in axes:  # a name part is key:value between '/': a value with either could not be parsed
            for v in a.names:
                if "/" in v or ":" in v or not v:
                    raise ValueError(f"registry: {a.axis} value {v!r} cannot appear in a case name "
                                     "(empty, or with '/' or ':')")
        return Registry(axes, parts, tuple(presets), schedules, dtypes, default_dtype, max_k)

    @staticmethod
    def from_context(ctx: dict) -> Registry:
        """The registry a run's context carries, or the committed one for JSON that predates it.

        Google Benchmark's context values are strings, so shardaccum_bench writes the registry as a
        JSON string (docs/DESIGN.md §7); an object is accepted too. Raises ValueError naming the key
        when the string is not JSON."""
        if "registry" not in ctx:
            return Registry.committed()
        value = ctx["registry"]
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                raise ValueError(f"registry: the context's registry string is not JSON ({e})") from None
            except RecursionError:
                raise ValueError("registry: the context's registry string is nested too deep") from None
        return Registry.from_json(value)

    @staticmethod
    @functools.cache
    def committed() -> Registry:
        """registry.json beside this module (read once; the Registry is immutable)."""
        return Registry.from_json(json.loads(COMMITTED.read_text(encoding="utf-8")))

    def axis(self, name: str) -> Axis:
        for a in self.axes:
            if a.axis == name:
                return a
        raise KeyError(name)

    def defaults(self) -> dict[str, str]:
        """Each strategy axis's default value."""
        return {a.axis: a.default for a in self.axes}

    def canonical_schedule(self, name: str, k: int) -> str:
        """The n/S string of canonical schedule `name` for K micro-batches (strategies/schedule.cpp).

        Raises ValueError for an unknown name or K below the schedule's min_k."""
        for s in self.canonical_schedules:
            if s.name == name:
                return s.build(k)
        known = ", ".join(s.name for s in self.canonical_schedules)
        raise ValueError(f"unknown canonical schedule {name!r}; known: {known}")

    def schedule_family(self, schedule: str) -> str:
        """The canonical name a literal schedule has for its K ('no-sync', 'sync', ...), else 'other'.
        Below min_k a constant family still names what its rule builds (nS: no-sync; S, SS: sync,
        the family whose letter the string holds)."""
        k = len(schedule)
        for s in self.canonical_schedules:
            if k >= s.min_k and s.build(k) == schedule:
                return s.name
        for s in self.canonical_schedules:
            if 1 <= k < s.min_k and s.kind == "constant" and s.letter in schedule and \
                    s.letter * (k - 1) + s.tail == schedule:
                return s.name
        return "other"

    def schedule_sort_key(self, schedule: str) -> tuple:
        """Report order: K, then the registry's canonical order, then other schedules by name."""
        names = tuple(s.name for s in self.canonical_schedules)
        family = self.schedule_family(schedule)
        return (len(schedule), (names.index(family), "") if family in names else (len(names), family), schedule)

    def schedule_display(self, schedule: str) -> str:
        """E.g. 'nSnS (interleaved-nosync-last)', or the literal string for other schedules."""
        family = self.schedule_family(schedule)
        return schedule if family == "other" else f"{schedule} ({family})"

    def preset_of(self, strategy: Strategy) -> str | None:
        """The preset whose axes and copy-in equal the strategy's, or None; a strategy run at a chosen
        lookahead other than the preset's own is not that preset (ZeRO-3 at lookahead 0 is not what it
        does), nor one with another copy-in (FSDP2's reduce-scatter reads its chunk_cat input)."""
        values = tuple((a, getattr(strategy, a)) for a in STRATEGY_AXES)
        chosen = getattr(strategy, "lookahead", None)
        copy_in = getattr(strategy, "copy_in", None) or "none"
        return next((p.name for p in self.presets if p.axes == values and p.copy_in == copy_in
                     and (chosen is None or p.lookahead is None or p.lookahead == chosen)), None)

    def strategy_sort_key(self, strategy: Strategy) -> tuple:
        """Report order: offload, binding, mode, division, each by the order of its values."""
        return tuple(self.axis(a).order(getattr(strategy, a)) for a in SORT_AXES)

    def name_values(self, values: dict[str, str]) -> list[str]:
        """The key:value parts of a case name in name_parts order, leaving out an `unless_default`
        axis at its default; keys of `values` not in name_parts are not written here."""
        parts = []
        for key in self.name_parts:
            if key not in values:
                continue
            axis = next((a for a in self.axes if a.axis == key), None)
            if axis is not None and axis.named == "unless_default" and values[key] == axis.default:
                continue
            parts.append(f"{key}:{values[key]}")
        return parts
