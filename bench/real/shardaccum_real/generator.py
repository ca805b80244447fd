"""The suite's gradient generator and exact reference in numpy, bit-identical to
common/gradient_gen.hpp (tested against libshardaccum_gen.so's sa_grad_fill_host and
sa_expected_fill_host in tests/py/test_gen_lib.py).

g(seed, step, mb, rank, unit, i) is element i of one layout unit's flat buffer (row-major over its
parameters, as ``shardaccum_bench --describe-layout`` gives the offsets). The hashes are splitmix64
finalisers in uint64 arithmetic with wraparound and logical shifts; values are exact in fp32 (k/8
in dyadic mode, multiples of 2^-23 or 2^-24 in random mode), so computing them in fp64 and storing
fp32 gives the C++ bits. Work is done in chunks of CHUNK elements, so that 1e7 elements need the
output array and a few chunk-sized temporaries only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DYADIC, RANDOM = 0, 1  # GenMode codes (capi/shardaccum_gen.h)
FP32, BF16 = 0, 1      # DType codes
WITNESS_STRIDE = 1024  # kWitnessStride
CHUNK = 1 << 20        # elements per vectorised step
_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class GradKey:
    """= sa_grad_key / shardaccum::GradKey: one micro-batch's gradient of one unit on one rank.
    numel: the unit's elements (>= numel is padding, 0); mode DYADIC or RANDOM; dyadic_max 1..4;
    shard: elements per rank's shard (its starts are witnesses; 0: none extra)."""
    seed: int
    step: int
    mb: int
    rank: int
    unit: int
    numel: int
    mode: int = DYADIC
    dyadic_max: int = 4
    shard: int = 0


@dataclass(frozen=True)
class OracleKey:
    """= sa_oracle_key: the exact reference of one unit after k micro-batches on world_size ranks;
    grad_dtype FP32 or BF16 (each value rounded to it before summing); other fields as GradKey."""
    seed: int
    step: int
    k: int
    world_size: int
    unit: int
    numel: int
    mode: int = DYADIC
    grad_dtype: int = FP32
    dyadic_max: int = 4
    shard: int = 0


def shard_numel(numel: int, world: int) -> int:
    """Elements of one rank's shard: roundup(numel, 8 * world) / world (common/layout.hpp)."""
    q = 8 * world
    return (numel + q - 1) // q * q // world


def mix64_int(z: int) -> int:
    """splitmix64's finaliser on one Python int (mix64 of common/gradient_gen.hpp)."""
    z &= _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


_C1, _C2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix64(z: np.ndarray) -> np.ndarray:
    """mix64 over a uint64 array (numpy's uint64 array products wrap modulo 2^64)."""
    z = (z ^ (z >> _S30)) * _C1
    z = (z ^ (z >> _S27)) * _C2
    return z ^ (z >> _S31)


def grad_prefix(key: GradKey) -> int:
    """The hash of (seed, step, mb, rank, unit): grad_prefix of common/gradient_gen.hpp."""
    h = mix64_int(key.seed ^ 0x5EED5EED5EED)
    h = mix64_int(h ^ ((key.step << 32 | key.mb) & _MASK))
    return mix64_int(h ^ ((key.rank << 32 | key.unit) & _MASK))


def witness_prefix(seed: int, step: int, unit: int) -> int:
    """The hash of (seed, step, unit): the witnesses' sign, the same for every mb and rank."""
    h = mix64_int(seed ^ 0x3717E55)
    return mix64_int(h ^ ((step << 32 | unit) & _MASK))


def is_witness(i: np.ndarray, shard: int) -> np.ndarray:
    """Whether each element index (uint64 array) is a witness: i % 1024 == 0 or a shard start."""
    w = i % np.uint64(WITNESS_STRIDE) == 0
    if shard:
        w |= i % np.uint64(shard) == 0
    return w


def _range(dyadic_max: int) -> int:
    """dyadic_max as the C ABI stores it (uint8, clamped) and gen_params reads it (0 as 1)."""
    return min(max(dyadic_max, 0), 255) or 1


def _values_at(prefix: int, witness: int, shard: int, mode: int, r: int, unit: int,
               i: np.ndarray) -> np.ndarray:
    """grad_value_at over the uint64 indices i (no padding handling): float32, never zero."""
    w = is_witness(i, shard)
    h = mix64(np.where(w, np.uint64(witness), np.uint64(prefix)) ^ i)
    odd = (h & np.uint64(1)) == 1
    if mode == DYADIC:
        mag = float(1 + unit % r)  # the witness magnitude m_u
        idx = (h % np.uint64(2 * r)).astype(np.int64)  # 0..2r-1 -> -r..-1, 1..r
        v = np.where(idx < r, idx - r, idx - r + 1).astype(np.float64)
        v = np.where(w, np.where(odd, mag, -mag), v) * 0.125
    else:
        m = 0.5 + (h >> np.uint64(41)).astype(np.float64) * 2.0**-24
        v = ((h >> np.uint64(40)).astype(np.int64) - (1 << 23)).astype(np.float64) * 2.0**-23
        v = np.where(w, np.where(odd, m, -m), v)
    return v.astype(np.float32)  # every value above is exact in fp32


def _indices(first: int, count: int):
    """(start offset into the output, uint64 unit indices) per chunk of [first, first + count)."""
    for s in range(0, count, CHUNK):
        yield s, np.arange(first + s, first + min(count, s + CHUNK), dtype=np.uint64)


def grad_values(key: GradKey, first: int, count: int) -> np.ndarray:
    """g(key, first + j) for j < count: float32 array of shape [count], 0 at indices >= numel
    (grad_value of common/gradient_gen.hpp). Raises ValueError on a negative first or count."""
    if first < 0 or count < 0:
        raise ValueError(f"first ({first}) and count ({count}) must be >= 0")
    out = np.zeros(count, dtype=np.float32)
    r = _range(key.dyadic_max)
    prefix, witness = grad_prefix(key), witness_prefix(key.seed, key.step, key.unit)
    for s, i in _indices(first, min(count, max(key.numel - first, 0))):
        out[s:s + i.size] = _values_at(prefix, witness, key.shard, key.mode, r, key.unit, i)
    return out


def float_to_bf16(x: np.ndarray) -> np.ndarray:
    """fp32 -> bf16 bits (uint16) with round-to-nearest-even, NaN kept quiet (common/dtype.hpp)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = ((u & np.uint32(0x7F800000)) == np.uint32(0x7F800000)) & ((u & np.uint32(0x007FFFFF)) != 0)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return np.where(nan, (u >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)


def bf16_to_float(b: np.ndarray) -> np.ndarray:
    """bf16 bits (uint16) -> fp32, exact: the bits are the high half of the fp32 bits."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def expected_values(key: OracleKey, first: int, count: int) -> np.ndarray:
    """The exact expected unit elements first + j, j < count: float64 array of shape [count],
    (1/N) * the sum over the K micro-batches (outer) and N ranks (inner) of g rounded to
    grad_dtype, summed in fp64 in that order (expected_value of common/gradient_gen.hpp); 0 at
    indices >= numel. Raises ValueError on a negative first or count."""
    if first < 0 or count < 0:
        raise ValueError(f"first ({first}) and count ({count}) must be >= 0")
    out = np.zeros(count, dtype=np.float64)
    r = _range(key.dyadic_max)
    witness = witness_prefix(key.seed, key.step, key.unit)
    prefixes = [grad_prefix(GradKey(key.seed, key.step, mb, rank, key.unit, key.numel))
                for mb in range(key.k) for rank in range(key.world_size)]
    for s, i in _indices(first, min(count, max(key.numel - first, 0))):
        total = np.zeros(i.size, dtype=np.float64)
        for p in prefixes:
            v = _values_at(p, witness, key.shard, key.mode, r, key.unit, i)
            if key.grad_dtype == BF16:
                v = bf16_to_float(float_to_bf16(v))
            total += v
        out[s:s + i.size] = total / key.world_size
    return out
