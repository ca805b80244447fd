"""The cases one runner process runs (the product of its axes) and their names, in the suite's
key:value form beginning real/."""

from __future__ import annotations

from dataclasses import dataclass

# cpu: offload to pinned host memory; cpu-pageable: to pageable (FSDP2 CPUOffloadPolicy(pin_memory=False),
# DeepSpeed offload_optimizer pin_memory false; FSDP1's CPUOffload always pins, so it refuses it).
OFFLOADS = ("cpu", "cpu-pageable", "none")
SYSTEMS = ("fsdp2", "fsdp1", "zero3", "zero2")
ZERO_STAGES = {"zero3": 3, "zero2": 2}


def zero_skip_reason(system: str, schedule: str) -> str | None:
    """Why DeepSpeed cannot run `schedule` (None when it can): S^K is its loop, n^(K-1)S its
    coalesce_grad_reduction(); engine.no_sync() asserts for stage 2 and 3 (deepspeed/runtime/engine.py
    DeepSpeedEngine.no_sync), so an interleaved schedule is no DeepSpeed configuration."""
    if system not in ZERO_STAGES:
        return None
    k = len(schedule)
    if schedule in ("S" * k, "n" * (k - 1) + "S"):
        return None
    return (f"{system} cannot run {schedule}: engine.no_sync() asserts for ZeRO stage 2/3, and DeepSpeed "
            "reduces either every micro-step (S^K) or once per coalesce_grad_reduction() block (n^(K-1)S)")


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
            tokens: int) -> tuple[list, list]:
    """(cases, skipped): every case the system can run, model-major, then dtype, offload and schedule
    (schedule fastest); and [(case, reason)] for those it cannot express (zero_skip_reason), which are
    not run and not error cases."""
    cases, skipped = [], []
    for c in (Case(system, m, world, s, o, d, tokens) for m in models for d in dtypes for o in offloads
              for s in schedules):
        why = zero_skip_reason(system, c.schedule)
        (skipped.append((c, why)) if why else cases.append(c))
    return cases, skipped
