"""bench/real's memory peaks are the measured steps' own: the previous boundary's deferred optimizer step
(DeepSpeed's engine.step() in zero_grad, untimed) is outside them as it is outside the time. Runs without
torch: a stand-in module gives measure.py the few torch.cuda calls it makes, over a counter of bytes that
the fake system's zero_grad and backwards allocate and free."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

REAL = Path(__file__).resolve().parents[2] / "bench" / "real"
if str(REAL) not in sys.path:
    sys.path.insert(0, str(REAL))

GB = 10**9


class FakeCuda:
    """torch.cuda's allocated / peak counters over bytes that the fake system moves; `rounding` bytes more
    allocated than requested per block (the caching allocator's rounding; 0 unless a test sets it)."""

    def __init__(self):
        self.allocated = 10 * GB
        self.peak = self.allocated
        self.rounding = 0
        self.requested = self.allocated
        self.requested_peak = self.requested
        self.pinned = 3 * GB
        self.pinned_peak = self.pinned
        self.memory = types.SimpleNamespace(reset_peak_host_memory_stats=self._reset_host,
                                            host_memory_stats=lambda: {"allocated_bytes.peak": self.pinned_peak})

    def alloc(self, n: int) -> None:
        self.allocated += n + self.rounding
        self.peak = max(self.peak, self.allocated)
        self.requested += n
        self.requested_peak = max(self.requested_peak, self.requested)

    def free(self, n: int) -> None:
        self.allocated -= n + self.rounding
        self.requested -= n

    def memory_stats(self, device=None) -> dict:
        return {"requested_bytes.all.current": self.requested, "requested_bytes.all.peak": self.requested_peak}

    def pin(self, n: int) -> None:
        self.pinned_peak = max(self.pinned_peak, self.pinned + n)

    def _reset_host(self) -> None:
        self.pinned_peak = self.pinned

    def synchronize(self, device=None) -> None:
        pass

    def memory_allocated(self, device=None) -> int:
        return self.allocated

    def reset_peak_memory_stats(self, device=None) -> None:
        self.peak = self.allocated
        self.requested_peak = self.requested

    def max_memory_allocated(self, device=None) -> int:
        return self.peak


@pytest.fixture
def measure(monkeypatch):
    """shardaccum_real.measure imported over a stand-in torch; returns (module, its FakeCuda)."""
    cuda = FakeCuda()
    torch = types.ModuleType("torch")
    torch.cuda = cuda
    torch.ones = lambda *a, **k: object()
    torch.distributed = types.SimpleNamespace(is_initialized=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.distributed", torch.distributed)
    monkeypatch.delitem(sys.modules, "shardaccum_real.measure", raising=False)
    module = importlib.import_module("shardaccum_real.measure")
    yield module, cuda
    sys.modules.pop("shardaccum_real.measure", None)


class DeferredStepSystem:
    """DeepSpeed's shape: each backward holds `grad` bytes while it runs; the boundary's optimizer step,
    deferred to the next zero_grad(), holds `optimizer_temp` bytes (device) and pins `optimizer_pin`."""

    def __init__(self, cuda: FakeCuda, grad: int, optimizer_temp: int, optimizer_pin: int = 0):
        self.cuda, self.grad, self.temp, self.pin = cuda, grad, optimizer_temp, optimizer_pin
        self.pending = False

    def zero_grad(self) -> None:
        if self.pending:
            self.pending = False
            self.cuda.alloc(self.temp)
            self.cuda.pin(self.pin)
            self.cuda.free(self.temp)

    def step_context(self):
        import contextlib
        return contextlib.nullcontext()

    def micro_batch(self, sync: bool):
        import contextlib
        return contextlib.nullcontext()

    def forward_backward(self, x) -> None:
        self.cuda.alloc(self.grad)
        self.cuda.pin(self.grad // 2)
        self.cuda.free(self.grad)

    def end_micro_batch(self, last: bool) -> None:
        if last:
            self.pending = True


def _timed(measure_module, system, steps: int) -> dict:
    state = types.SimpleNamespace(step=0, mb=0)
    device = types.SimpleNamespace(type="cuda")
    return measure_module.timed_steps(system, state, "SSSS", 0, 1, steps, device, lambda line: None)["counters"]


@pytest.mark.parametrize("steps", [1, 2, 3])
def test_the_deferred_optimizer_step_is_outside_the_peaks(measure, steps):
    module, cuda = measure
    # the optimizer step's 4 GB above a step's own 2 GB: before the fix the second measured step's
    # window opened on the first's deferred engine.step() and read 14 GB
    counters = _timed(module, DeferredStepSystem(cuda, grad=2 * GB, optimizer_temp=4 * GB, optimizer_pin=5 * GB),
                      steps)
    assert counters["device_baseline_bytes"] == 10 * GB
    assert counters["peak_device_bytes"] == 12 * GB
    assert counters["peak_pinned_bytes"] == 4 * GB  # 3 held + the backward's 1, not the optimizer's 5
    assert counters["device_baseline_requested_bytes"] == 10 * GB
    assert counters["peak_device_requested_bytes"] == 12 * GB


def test_the_requested_peak_is_the_bytes_asked_for_before_the_allocators_rounding(measure):
    module, cuda = measure
    cuda.rounding = 2**20  # each block 1 MiB above what it was asked for
    cuda.requested -= 3 * 2**20  # three such blocks held before the case
    counters = _timed(module, DeferredStepSystem(cuda, grad=2 * GB, optimizer_temp=4 * GB), 2)
    assert counters["peak_device_bytes"] == 12 * GB + 2**20
    assert counters["device_baseline_requested_bytes"] == 10 * GB - 3 * 2**20
    assert counters["peak_device_requested_bytes"] == 12 * GB - 3 * 2**20


def test_a_step_above_its_optimizer_step_keeps_its_own_peak(measure):
    module, cuda = measure
    counters = _timed(module, DeferredStepSystem(cuda, grad=6 * GB, optimizer_temp=4 * GB), 2)
    assert counters["peak_device_bytes"] == 16 * GB


def test_a_requested_count_above_the_allocated_one_is_not_kept(measure):
    module, cuda = measure
    cuda.requested += 5 * GB  # a counter that missed frees: 15 GB requested of 10 allocated
    counters = _timed(module, DeferredStepSystem(cuda, grad=2 * GB, optimizer_temp=4 * GB), 2)
    assert counters["peak_device_bytes"] == 12 * GB
    assert "peak_device_requested_bytes" not in counters and "device_baseline_requested_bytes" not in counters


def test_on_the_cpu_no_memory_figures(measure):
    module, cuda = measure
    state = types.SimpleNamespace(step=0, mb=0)
    counters = module.timed_steps(DeferredStepSystem(cuda, GB, GB), state, "nS", 0, 0, 2,
                                  types.SimpleNamespace(type="cpu"), lambda line: None)["counters"]
    assert "peak_device_bytes" not in counters and "device_baseline_bytes" not in counters
    assert "peak_device_requested_bytes" not in counters and "device_baseline_requested_bytes" not in counters
    assert counters["step_ms_min"] <= counters["step_ms"] <= counters["step_ms_max"]
