"""The counter vocabulary of shardaccum_bench (docs/DESIGN.md §7): names, units and what they pair with.

Every counter is per optimizer step and per rank; times are the max over ranks. Times are in
milliseconds (ms), byte counters in bytes, bandwidths in GB/s (1e9 bytes per second), fractions of a
ceiling in 0..1.
"""

from __future__ import annotations

from dataclasses import dataclass

STEP = "step_ms"


@dataclass(frozen=True)
class Phase:
    """One segment of a step's stacked bar: a time counter (ms) and how it is drawn."""

    counter: str
    label: str
    color: str


# Colour-blind-safe (Okabe-Ito based); red is kept for wrong results.
PHASES = (
    Phase("backward_ms", "backward", "#0072B2"),
    Phase("nccl_ms", "reduce-scatter", "#E69F00"),
    Phase("accumulate_ms", "accumulate", "#009E73"),
    Phase("h2d_ms", "H2D", "#56B4E9"),
    Phase("d2h_ms", "D2H", "#CC79A7"),
    Phase("cpu_add_ms", "CPU add", "#F0E442"),
    Phase("finalize_ms", "finalize", "#8C6D31"),
)
# Step time no phase covers: waits and gaps between ops (0 once phases overlap). Kept, not dropped: in
# cases without overlap it is where the step's waits show.
OTHER = Phase("other", "other: waits and gaps (step − Σ phases)", "#BBBBBB")


@dataclass(frozen=True)
class Paired:
    """A measured byte counter beside its model_* prediction (both in bytes)."""

    counter: str
    label: str

    @property
    def model(self) -> str:
        return "model_" + self.counter


PEAK_DEVICE = Paired("peak_device_bytes", "peak device memory")
PEAK_PINNED = Paired("peak_pinned_bytes", "peak pinned host memory")
H2D_BYTES = Paired("h2d_bytes", "H2D bytes")
D2H_BYTES = Paired("d2h_bytes", "D2H bytes")
NCCL_INPUT = Paired("nccl_input_bytes", "reduce-scatter input bytes")
MEMORY_PAIRS = (PEAK_DEVICE, PEAK_PINNED)
TRAFFIC_PAIRS = (H2D_BYTES, D2H_BYTES)


@dataclass(frozen=True)
class CeilingFraction:
    """A phase's achieved bandwidth as a fraction (0..1) of a ceiling measured in the same run."""

    counter: str
    label: str
    ceiling_key: str  # context key holding the ceiling in GB/s
    phase: str        # the phase's time counter (ms): no fraction is expected where it is 0 or absent
    alone_key: str = ""  # a fraction of two ceilings weighed by time: the one for the phase's time alone


CEILING_FRACTIONS = (
    CeilingFraction("h2d_frac_ceiling", "H2D", "ceiling_h2d_gbps", "h2d_ms"),
    CeilingFraction("d2h_frac_ceiling", "D2H", "ceiling_d2h_gbps", "d2h_ms"),
    CeilingFraction("accumulate_frac_ceiling", "accumulate", "ceiling_device_copy_gbps", "accumulate_ms"),
    CeilingFraction("cpu_add_frac_ceiling", "CPU add", "ceiling_host_add_gbps", "cpu_add_ms"),
    # Against the host add ceiling for its time alone and the host add during D2H ceiling for its time
    # beside D2Hs (bench/counters.hpp cpu_add_frac_shared_ceiling): the host memory the add shared.
    CeilingFraction("cpu_add_frac_shared_ceiling", "CPU add (shared)", "ceiling_host_add_during_d2h_gbps",
                    "cpu_add_ms", alone_key="ceiling_host_add_gbps"),
    CeilingFraction("nccl_frac_ceiling", "reduce-scatter", "ceiling_reduce_scatter_busbw_gbps", "nccl_ms"),
)

# Context keys of ceilings in GB/s, in report order, with what each measures.
CEILING_KEYS = {
    "ceiling_h2d_gbps": "pinned H2D, all ranks at once",
    "ceiling_d2h_gbps": "pinned D2H, all ranks at once",
    "ceiling_bidir_gbps": "pinned H2D and D2H at once",
    "ceiling_device_copy_gbps": "device copy (read + write)",
    "ceiling_host_add_gbps": "host add a += b",
    "ceiling_host_memory_gbps": "host memory: the host add while D2Hs land, both together",
    "ceiling_host_add_during_d2h_gbps": "of which the host add: its rate while D2Hs land",
    "host_add_during_d2h_gbps": "of which the host add (runs before 2026-12-04)",
    "ceiling_reduce_scatter_busbw_gbps": "reduce-scatter bus bandwidth",
}

# bench/real/run.py's accumulation costs: step − step of nnnS (A: no offload, B: the same offload). Being
# differences of two measured times, they are the only figures that may be below 0 (noise, or a faster S).
ACCUM_COST_A = "accum_cost_a_ms"
ACCUM_COST_B = "accum_cost_b_ms"
SIGNED_COUNTERS = frozenset({ACCUM_COST_A, ACCUM_COST_B})

CORRECT = "correct"
MAX_REL_ERR = "max_rel_err"
ERR_BOUND = "err_bound"

# Counters where a larger value is better (compare flips its regression test for these).
HIGHER_IS_BETTER_SUFFIXES = ("_gbps", "_frac_ceiling")


def higher_is_better(metric: str) -> bool:
    """True for bandwidths and ceiling fractions, False for times, bytes and errors."""
    return metric.endswith(HIGHER_IS_BETTER_SUFFIXES)


def unit_of(metric: str) -> str:
    """The unit of a counter by its name: 'ms', 'bytes', 'GB/s', 'fraction' or ''."""
    if metric.endswith("_ms") or metric in ("real_time", "cpu_time"):
        return "ms"
    if metric.endswith("_bytes"):
        return "bytes"
    if metric.endswith("_gbps"):
        return "GB/s"
    if metric.endswith("_frac_ceiling"):
        return "fraction"
    return ""
