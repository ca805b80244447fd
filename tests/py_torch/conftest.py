"""Tests of the real runner that need torch (CPU torch is enough: FSDP2 on gloo at world 1). CI has no
torch: every test here skips without it. Run: /work/torchvenv/bin/python -m pytest tests/py_torch -q
(any Python with torch >= 2.6 and numpy); bench/real/README.md says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "bench" / "real"
FIX = ROOT / "tests" / "fixtures" / "real"
if str(REAL) not in sys.path:
    sys.path.insert(0, str(REAL))


class FakeVerdict:
    """The oracle.Verdict interface the runner reads (correct, max_unit_rel_err, bound, merge)."""

    def __init__(self, err2, ref2, bound=1e-6):
        self.err2, self.ref2, self.bound = err2, ref2, bound

    def merge(self, other):
        self.err2 += other.err2
        self.ref2 += other.ref2

    @property
    def max_unit_rel_err(self):
        return max((e / r) ** 0.5 if r else e ** 0.5 for e, r in zip(self.err2.values(), self.ref2.values()))

    @property
    def correct(self):
        return self.max_unit_rel_err <= self.bound


class FakeGen:
    """A generator and oracle in plain torch, so the runner's plumbing is tested without libshardaccum_gen:
    g(step, mb, rank, unit, i) are small integers (exact sums), the oracle sums them over the schedule."""

    path = "fake"

    def shard_numel(self, numel, world):
        q = 8 * world
        return (numel + q - 1) // q * q // world

    def dyadic_max(self, triple, k, world):
        return 4

    @staticmethod
    def values(key, first, count):
        import torch
        i = torch.arange(first, first + count, dtype=torch.float64)
        return ((i * 7 + key["unit"] * 3 + key["mb"] * 5 + key["step"] * 11 + key["rank"]) % 9) - 4

    def fill(self, out, key, first):
        out.copy_(self.values(key, first, out.numel()).view(out.shape))

    def verdict(self, triple, mode, k, world, okey_of, pieces):
        """Per unit err²/ref² of the pieces against the schedule's exact sum over micro-batches and ranks."""
        err2, ref2 = {}, {}
        for unit, first, t in pieces:
            ok = okey_of(unit)
            exp = sum(self.values({**ok, "mb": mb, "rank": r}, first, t.numel())
                      for mb in range(ok["k"]) for r in range(world)) / world
            err2[unit] = err2.get(unit, 0.0) + float(((t.double().cpu() - exp) ** 2).sum())
            ref2[unit] = ref2.get(unit, 0.0) + float((exp ** 2).sum())
        return FakeVerdict(err2, ref2)


@pytest.fixture(scope="session")
def cpu_device():
    """A gloo process group at world 1 (as run.py plain --device cpu) for the whole session."""
    from shardaccum_real import cli, launch, runner
    opts = cli.parse(["--system", "fsdp2", "--device", "cpu"])
    dev = runner.init_distributed(opts, launch.detect({}))
    yield dev
    import torch.distributed as dist
    dist.destroy_process_group()


@pytest.fixture
def fake_gen():
    return FakeGen()
