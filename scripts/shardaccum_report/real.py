"""A real system's case (bench/real/run.py: PyTorch FSDP2/FSDP1, DeepSpeed ZeRO-3/ZeRO-2): its name and its identity.

A name looks like
``real/system:fsdp2/model:uniform:16x64M/world:1/schedule:SSSS/offload:cpu/dtype:fp32-fp32-fp32``
(``/tokens:T`` appended when T > 0). Real cases are not registry strategies: the registry only orders
their schedules here; which suite case a real case stands beside is pairing.py's concern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .case import Group
from .registry import Registry

REAL_PREFIX = "real"
# The runner's offload values (docs/DESIGN.md; bench/real/run.py --offload): not registry values.
# cpu-pageable: offload to pageable host memory (FSDP2 CPUOffloadPolicy(pin_memory=False), DeepSpeed
# offload_optimizer pin_memory false).
REAL_OFFLOADS = ("cpu", "cpu-pageable", "none")
_KEYS = ("system", "model", "world", "schedule", "offload", "dtype")
_OPTIONAL = ("tokens",)


@dataclass(frozen=True)
class RealKey:
    """The identity of one real case: system, model, world size, schedule (n/S string), offload, dtype
    and tokens (0 = no GEMMs). `group` and `sort_key` mirror CaseKey's so the tools order both alike."""

    system: str
    model: str
    world: int
    schedule: str
    offload: str
    dtype: str
    tokens: int = 0

    @property
    def k(self) -> int:
        return len(self.schedule)

    @property
    def extra(self) -> tuple[tuple[str, str], ...]:
        """The name parts beyond the suite's axes: tokens, when T > 0 (matched as a suite case's extra)."""
        return (("tokens", str(self.tokens)),) if self.tokens else ()

    @property
    def group(self) -> Group:
        return Group(self.model, self.world, self.k, self.dtype, self.extra)

    @property
    def display(self) -> str:
        """E.g. 'real fsdp2, offload cpu'."""
        return f"real {self.system}, offload {self.offload}"

    @property
    def name(self) -> str:
        parts = [REAL_PREFIX, f"system:{self.system}", f"model:{self.model}", f"world:{self.world}",
                 f"schedule:{self.schedule}", f"offload:{self.offload}", f"dtype:{self.dtype}"]
        return "/".join(parts + [f"{k}:{v}" for k, v in self.extra])

    @property
    def sort_key(self) -> tuple:
        """Group, then the schedule in the committed registry's order, system, offload (cpu, none)."""
        offload = REAL_OFFLOADS.index(self.offload)
        return (self.group.sort_key, Registry.committed().schedule_sort_key(self.schedule), self.system, offload)


def is_real_name(name: str) -> bool:
    return name.split("/", 1)[0] == REAL_PREFIX


def parse_real_name(name: str) -> RealKey:
    """Parses a 'real/' name. Raises ValueError naming the problem: a part that is not key:value, a key
    repeated, unknown or missing, a world or tokens that is not an integer (world >= 1, tokens >= 0), a
    schedule that is not n/S letters ending in S, or an offload other than cpu and none.

    Google Benchmark's suffixes are not expected (the runner writes names itself) and are refused."""
    parts = name.split("/")
    if parts[0] != REAL_PREFIX:
        raise ValueError(f"{name!r} does not begin with '{REAL_PREFIX}/'")
    values: dict[str, str] = {}
    for part in parts[1:]:
        key, sep, value = part.partition(":")
        if not sep or not value:
            raise ValueError(f"part {part!r} of {name!r} is not key:value")
        if key not in _KEYS + _OPTIONAL:
            raise ValueError(f"{name!r} has the unknown key {key!r} (a real case has "
                             f"{', '.join(_KEYS)} and optionally {', '.join(_OPTIONAL)})")
        if key in values:
            raise ValueError(f"key {key!r} appears twice in {name!r}")
        # model values hold ':' (uniform:16x64M): only the first ':' separates the key.
        values[key] = value
    missing = [k for k in _KEYS if k not in values]
    if missing:
        raise ValueError(f"{name!r} lacks {', '.join(missing)}")
    world, tokens = values["world"], values.get("tokens", "0")
    if not re.fullmatch(r"[1-9][0-9]*", world):
        raise ValueError(f"world size {world!r} in {name!r} is not a positive integer")
    if not re.fullmatch(r"[0-9]+", tokens):
        raise ValueError(f"tokens {tokens!r} in {name!r} is not a non-negative integer")
    if not re.fullmatch(r"[nS]*S", values["schedule"]):
        raise ValueError(f"schedule {values['schedule']!r} in {name!r} is not n/S letters ending in S")
    if values["offload"] not in REAL_OFFLOADS:
        raise ValueError(f"offload {values['offload']!r} in {name!r} is not one of {', '.join(REAL_OFFLOADS)}")
    return RealKey(values["system"], values["model"], int(world), values["schedule"], values["offload"],
                   values["dtype"], int(tokens))
