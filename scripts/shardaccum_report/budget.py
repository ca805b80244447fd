"""The fastest correct strategy within a device-memory and a pinned-memory budget (report.py
--device-gb/--pinned-gb), per group and schedule, with the cases tied with it (spread.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .counters import PEAK_DEVICE, PEAK_PINNED, STEP
from .loading import Case
from .spread import fastest_with_ties

GB = 1e9  # the flags are decimal gigabytes, as GPU memory is sold (an "80 GB" H100 is 80e9 B)
DEFAULT_DEVICE_GB = 80.0
DEFAULT_PINNED_GB = 64.0


@dataclass(frozen=True)
class Budget:
    """Bytes per rank: the device and pinned host memory a case's peaks must not exceed."""

    device_gb: float
    pinned_gb: float

    def __post_init__(self):
        for flag, value in (("--device-gb", self.device_gb), ("--pinned-gb", self.pinned_gb)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{flag} {value!r}: give a finite number of GB (1e9 bytes) >= 0")

    def fits(self, case: Case) -> bool:
        """Both peaks known and within the budget (a missing peak is no proof that it fits)."""
        device, pinned = case.value(PEAK_DEVICE.counter), case.value(PEAK_PINNED.counter)
        return (device is not None and pinned is not None and device <= self.device_gb * GB
                and pinned <= self.pinned_gb * GB)


@dataclass(frozen=True)
class Choice:
    """What a budget leaves for one schedule: the pick (None when no correct case fits), the cases tied
    with it, how many correct cases fit out of how many, and the least-memory correct case (to say
    what a budget would need when nothing fits)."""

    schedule: str
    pick: Case | None
    ties: list[Case]
    fitting: int
    correct: int
    leanest: Case | None


def choose(cases: list[Case], budget: Budget) -> Choice:
    """The choice among one schedule's cases (all of the same schedule)."""
    correct = [c for c in cases if c.status == "correct" and c.value(STEP) is not None]
    fitting = [c for c in correct if budget.fits(c)]
    pick, ties = fastest_with_ties(fitting)
    known = [c for c in correct if c.value(PEAK_DEVICE.counter) is not None and c.value(PEAK_PINNED.counter) is not None]
    leanest = min(known, key=lambda c: (c.value(PEAK_DEVICE.counter), c.value(PEAK_PINNED.counter)), default=None)
    return Choice(cases[0].key.schedule if cases else "", pick, ties, len(fitting), len(correct), leanest)
