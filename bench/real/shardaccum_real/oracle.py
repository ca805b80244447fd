"""The suite's oracle on a real system's accumulated shard (docs/DESIGN.md §5): the per-element
sums of libshardaccum_gen (sa_compare_host / sa_compare_cuda) against the exact reference, judged
with strategies/oracle.hpp's rule (is_correct, OracleResult::merge) and its bound (error_bound).

One Verdict per rank: add the sums of every piece of every unit that rank holds, then read
``correct``. Unlike the suite there is no padding term: FSDP owns its padding, and the pieces name
only real unit elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class UnitPiece:
    """A contiguous run of unit elements a rank holds: elements [first, first + count) of unit
    `unit` (indices into the unit's flat buffer, as --describe-layout's offsets)."""
    unit: int
    first: int
    count: int


def _rel(err2: float, ref2: float) -> float:
    """sqrt(err2 / ref2), or sqrt(err2) when ref2 is 0; NaN as infinity (OracleResult::merge)."""
    r = math.sqrt(err2 / ref2) if ref2 > 0 else math.sqrt(err2)
    return math.inf if math.isnan(r) else r


@dataclass
class Verdict:
    """OracleResult of strategies/oracle.hpp for one rank, less bad_padding. bound: the case's
    error_bound. add() sums per unit, so a unit checked in several pieces is judged as one shard."""
    bound: float
    err_norm2: float = 0.0
    ref_norm2: float = 0.0
    nonfinite: int = 0
    units: dict[int, list[float]] = field(default_factory=dict)  # unit -> [err2, ref2]
    merged_max_unit_rel_err: float = 0.0  # from merge(): other ranks' per-unit maxima

    @classmethod
    def for_case(cls, lib, dtypes: tuple[int, int, int], mode: int, k: int, world: int) -> Verdict:
        """An empty verdict with the library's bound for the dtype codes (grad, reduce, accum)."""
        return cls(bound=lib.error_bound(*dtypes, mode, k, world))

    def add(self, unit: int, err_norm2: float, ref_norm2: float, nonfinite: int) -> None:
        """Folds one piece's sums (as sa_compare_* returns them) of unit `unit` in."""
        self.err_norm2 += err_norm2
        self.ref_norm2 += ref_norm2
        self.nonfinite += int(nonfinite)
        sums = self.units.setdefault(unit, [0.0, 0.0])
        sums[0] += err_norm2
        sums[1] += ref_norm2

    def merge(self, other: Verdict) -> None:
        """Folds another rank's verdict in (OracleResult::merge(OracleResult)): totals add, the
        per-unit maximum is the larger (units are not summed across ranks)."""
        self.err_norm2 += other.err_norm2
        self.ref_norm2 += other.ref_norm2
        self.nonfinite += other.nonfinite
        self.merged_max_unit_rel_err = max(self.merged_max_unit_rel_err, other.max_unit_rel_err)

    @property
    def max_unit_rel_err(self) -> float:
        """The largest relative error of one unit (a loss in one unit of many is not diluted)."""
        per_unit = (_rel(e, r) for e, r in self.units.values())
        return max([self.merged_max_unit_rel_err, *per_unit])

    @property
    def rel_err(self) -> float:
        """Norm-wise ||x - e|| / ||e|| over everything added (||x - e|| when ||e|| is 0)."""
        return math.sqrt(self.err_norm2 / self.ref_norm2) if self.ref_norm2 > 0 else math.sqrt(self.err_norm2)

    @property
    def correct(self) -> bool:
        """is_correct of strategies/oracle.cpp: nothing non-finite, the whole and every unit within
        the bound (a NaN error is never within it)."""
        return (self.nonfinite == 0 and math.isfinite(self.rel_err) and self.rel_err <= self.bound
                and self.max_unit_rel_err <= self.bound)

    def check(self, lib, key, piece: UnitPiece, tensor) -> None:
        """check_tensor on a piece (key.unit must be piece.unit) and add() of its sums."""
        if key.unit != piece.unit:
            raise ValueError(f"key of unit {key.unit} for a piece of unit {piece.unit}")
        flat = tensor.reshape(-1)
        if flat.numel() != piece.count:
            raise ValueError(f"tensor of {flat.numel()} elements for a piece of {piece.count}")
        self.add(piece.unit, *check_tensor(lib, key, piece.first, flat))


def coverage_problems(spans: list, numels: dict) -> list[str]:
    """What keeps the pieces of every rank from covering each unit exactly once: `spans` are
    (unit, first, count) over all ranks, `numels` {unit: numel} of every unit of the layout. Returns
    one message per unit with a gap, an overlap or a piece outside [0, numel) (empty: all covered).
    A verdict adds only the pieces it is handed, so without this check missing pieces would read
    correct (an empty list of pieces has error 0)."""
    by_unit: dict[int, list[tuple[int, int]]] = {u: [] for u in numels}
    problems = []
    for unit, first, count in spans:
        if unit not in by_unit:
            problems.append(f"a piece of unit {unit}, which the layout does not have")
            continue
        if count > 0:
            by_unit[unit].append((first, first + count))
    for unit, runs in by_unit.items():
        at, covered = 0, 0
        for a, b in sorted(runs):
            if a < at:
                problems.append(f"unit {unit}: elements [{a}, {min(at, b)}) are in two pieces")
            elif a > at:
                problems.append(f"unit {unit}: elements [{at}, {a}) are in no piece")
            covered += b - a
            at = max(at, b)
        if at < numels[unit]:
            problems.append(f"unit {unit}: elements [{at}, {numels[unit]}) are in no piece")
        elif at > numels[unit]:
            problems.append(f"unit {unit}: pieces reach element {at} of {numels[unit]}")
    return problems


def dyadic_range(lib, dtypes: tuple[int, int, int], k: int, world: int) -> int:
    """The generator's dyadic_max for the case (strategies/oracle.hpp dyadic_range, from the library)."""
    return lib.dyadic_range(*dtypes, k, world)


def check_tensor(lib, key, first: int, tensor) -> tuple[float, float, int]:
    """The oracle's sums (err², ref², non-finite count) of a torch tensor whose elements, flattened
    row-major, are unit elements first, first + 1, ... of key (an OracleKey). fp32 or bf16; on the
    CPU (sa_compare_host) or a CUDA device (sa_compare_cuda on that device's current stream,
    which it synchronises). Raises ValueError for another dtype or device, GenLibError for a CUDA
    error. torch is imported here only."""
    import torch

    codes = {torch.float32: 0, torch.bfloat16: 1}
    if tensor.dtype not in codes:
        raise ValueError(f"check_tensor: dtype {tensor.dtype}; the oracle reads float32 or bfloat16")
    t = tensor.detach().contiguous()  # row-major: element order of the flattened tensor
    if t.device.type == "cuda":
        with torch.cuda.device(t.device):
            stream = torch.cuda.current_stream(t.device).cuda_stream
            return lib.compare_cuda(key, first, t.numel(), t.data_ptr(), codes[t.dtype], stream)
    if t.device.type == "cpu":
        return lib.compare_host(key, first, t.numel(), t.data_ptr(), codes[t.dtype])
    raise ValueError(f"check_tensor: device {t.device}; the oracle reads CPU or CUDA tensors")
