"""Each real system's case beside the suite case of its preset (issue 13 item 5, docs/DESIGN.md §7).

Same model, world size, schedule, dtype (and tokens, as the suite's extra name part); the strategy is
the registry's preset named like the system (fsdp2, fsdp1): real `offload:cpu` beside the preset's
own offload value, real `offload:none` beside the preset with the registry's one offload value whose
property `offloaded` is false. Real `offload:cpu-pageable` (FSDP2 `CPUOffloadPolicy(pin_memory=False)`,
DeepSpeed `offload_optimizer.pin_memory: false`) stands beside nothing: every preset's offload value
models pinned host memory (docs/PRESETS.md F1, Z6), so pairing it with one would compare another
system. Nothing here names a strategy value: all of it is the registry's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .case import CaseKey, Strategy
from .loading import Case, Run
from .real import RealKey
from .registry import Registry

NO_PRESET_CASE = "no preset case in the inputs"
# The real runner's offload value whose host memory is not pinned (bench/real/shardaccum_real/cases.py).
UNPINNED_OFFLOAD = "cpu-pageable"
PARAM_TRAFFIC = "param-traffic"
GRAD_ACCUMULATION = "grad-accumulation"
DEVICE_ADD_GRID = "device-add-grid"
COMM_PRIORITY = "comm-priority"
HOOK_HOST_US = "hook-host-us"


@dataclass
class Pair:
    """A real case and what it is compared with: the preset case's key (None when the registry has no
    preset of that system, or no value to map the offload to), the case when an input holds it, and
    `why` the preset side is empty (None when the case is there)."""

    real: Case
    preset_key: CaseKey | None
    preset: Case | None
    why: str | None

    @property
    def key(self) -> RealKey:
        return self.real.key


def no_offload_value(registry: Registry) -> str | None:
    """The registry's offload value that does not offload (property offloaded false), when exactly one."""
    values = [v.name for v in registry.axis("offload").values if v.property("offloaded") is False]
    return values[0] if len(values) == 1 else None


def preset_key(key: RealKey, registry: Registry) -> tuple[CaseKey | None, str | None]:
    """The suite case a real case stands beside, or (None, why not)."""
    preset = next((p for p in registry.presets if p.name == key.system), None)
    if preset is None:
        names = ", ".join(p.name for p in registry.presets) or "none"
        return None, f"the registry has no preset {key.system!r} (its presets: {names})"
    if key.offload == UNPINNED_OFFLOAD:
        return None, (f"offload {UNPINNED_OFFLOAD} (pin_memory off) is not modelled: the preset {preset.name!r} "
                      f"offloads to pinned host memory (docs/PRESETS.md F1, Z6)")
    strategy = Strategy(**dict(preset.axes), registry=registry, copy_in=preset.copy_in)
    if key.offload == "none":
        none = no_offload_value(registry)
        if none is None:
            return None, "the registry has no single offload value with offloaded false"
        strategy = replace(strategy, offload=none)
    extra = key.extra + ((("copy-in", strategy.copy_in),) if strategy.copy_in else ())
    return CaseKey(key.model, key.world, key.schedule, strategy, key.dtype, extra, registry), None


def normalised(key: CaseKey) -> CaseKey:
    """A suite case's key as preset_key builds one from a real case, so that the two compare equal:
    the name parts in one order; `param-traffic`, `grad-accumulation`, `device-add-grid`,
    `comm-priority`, `hook-host-us` and `lookahead` dropped (a real system's parameters always move,
    autograd accumulates its gradients, PyTorch launches its adds on every SM, and its stream
    priority, host time per unit and lookahead are its own, the preset's);
    `backward:gemm-TN` read as the real runner's `tokens:N` (both are N tokens of GEMMs,
    bench/real/README.md)."""
    extra = []
    for k, v in key.extra:
        if k in (PARAM_TRAFFIC, GRAD_ACCUMULATION, DEVICE_ADD_GRID, COMM_PRIORITY, HOOK_HOST_US, "lookahead"):
            continue
        if k == "backward" and v.startswith("gemm-T"):
            k, v = "tokens", v[len("gemm-T"):]
        extra.append((k, v))
    return replace(key, extra=tuple(sorted(extra)))


def system_priority(key: CaseKey, registry: Registry) -> str | None:
    """The comm stream priority ("greatest", "default") of the preset a suite case follows: the one
    with its binding, offload, mode and division, or with them but for an offload that does not
    offload (the preset's case without offload, as preset_key pairs one); None when no preset is, or
    the registry predates the priority."""
    s = key.strategy
    axes = {"binding": s.binding, "offload": s.offload, "mode": s.mode, "division": s.division}
    none = no_offload_value(registry)
    for p in registry.presets:
        own = dict(p.axes)
        if all(axes[a] == v for a, v in own.items() if a != "offload") and \
                axes["offload"] in (own.get("offload"), none):
            return p.comm_priority
    return None


def suite_index(suite: Run) -> dict[CaseKey, Case]:
    """The suite's cases by normalised key; where one case ran in several of these ways, the one with
    parameter traffic, then with autograd's accumulation, then with PyTorch's device add grid (what a
    real system does: its parameters always move under offload, autograd adds each fresh gradient,
    and PyTorch's `+=` takes every SM). Of the grids, `device-add-grid:torch` before no segment
    (--device-add-grid auto: torch for a preset's own combination) before `two-per-sm`; then a
    `comm-priority:P` naming the priority of the system the case follows (system_priority) before no
    segment before another priority; then no `hook-host-us` segment (auto: the preset's measured host
    time) before a named one."""
    grid_rank = {"torch": 2, None: 1, "two-per-sm": 0}

    def realism(case: Case) -> tuple[bool, bool, int, int, bool]:
        extra = dict(case.key.extra)
        named = extra.get(COMM_PRIORITY)
        priority = 1 if named is None else 2 if named == system_priority(case.key, suite.registry) else 0
        return (extra.get(PARAM_TRAFFIC) == "on", extra.get(GRAD_ACCUMULATION) == "autograd",
                grid_rank.get(extra.get(DEVICE_ADD_GRID), 0), priority, HOOK_HOST_US not in extra)

    index: dict[CaseKey, Case] = {}
    for case in suite.cases:
        key = normalised(case.key)
        if key not in index or realism(case) > realism(index[key]):
            index[key] = case
    return index


def pair_cases(real: Run, suite: Run | None) -> list[Pair]:
    """Every real case, in report order, with its preset case from `suite` (None: no suite run given).
    The registry is the suite run's (a real run carries none), else the committed one."""
    registry = suite.registry if suite is not None else Registry.committed()
    by_key = suite_index(suite) if suite is not None else {}
    pairs = []
    for case in real.cases:
        key, why = preset_key(case.key, registry)
        found = by_key.get(normalised(key)) if key is not None else None
        why = f"{NO_PRESET_CASE}: {why}" if key is None else (None if found else NO_PRESET_CASE)
        pairs.append(Pair(case, key, found, why))
    return pairs


def ratio(real: float | None, preset: float | None) -> float | None:
    """real / preset; None when either is missing or both are 0; inf when only the preset is 0."""
    if real is None or preset is None:
        return None
    if preset == 0:
        return None if real == 0 else math.inf
    return real / preset
