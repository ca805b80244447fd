"""The cases one runner process runs (the product of its axes) and their names, in the suite's
key:value form beginning real/."""

from __future__ import annotations

from dataclasses import dataclass

OFFLOADS = ("cpu", "none")
SYSTEMS = ("fsdp2", "fsdp1")


@dataclass(frozen=True)
class Case:
    system: str
    model: str     # the --model value as given (the layout's spec)
    world: int
    schedule: str  # letters, e.g. nSnS
    offload: str   # cpu | none
    dtype: str     # grad-reduce-accum
    tokens: int

    @property
    def name(self) -> str:
        """real/system:S/model:M/world:N/schedule:X/offload:O/dtype:D, then /tokens:T only when T > 0."""
        n = (f"real/system:{self.system}/model:{self.model}/world:{self.world}/schedule:{self.schedule}"
             f"/offload:{self.offload}/dtype:{self.dtype}")
        return n + (f"/tokens:{self.tokens}" if self.tokens > 0 else "")

    def baseline(self, offload: str) -> "Case":
        """The case whose step this case's accumulation cost subtracts: nnnS-like (n^(K-1)S) with `offload`."""
        k = len(self.schedule)
        return Case(self.system, self.model, self.world, "n" * (k - 1) + "S", offload, self.dtype, self.tokens)


def product(system: str, models: list, world: int, schedules: list, offloads: list, dtypes: list,
            tokens: int) -> list:
    """Every case, model-major, then dtype, offload and schedule (schedule fastest)."""
    return [Case(system, m, world, s, o, d, tokens)
            for m in models for d in dtypes for o in offloads for s in schedules]
