"""bench/real/shardaccum_real/oracle.py: the verdict of strategies/oracle.cpp is_correct on a real
system's shard (no padding term), with injected sums, and check_tensor through the library when torch
is importable. Seen failing: with `correct` reading only rel_err (the per-unit term dropped),
test_one_bad_unit_of_many_is_wrong_though_the_whole_is_within_the_bound failed; with _rel's NaN not
made infinity, the NaN test failed."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from bench_build import REAL, built_gen_lib

if str(REAL) not in sys.path:
    sys.path.insert(0, str(REAL))

from shardaccum_real import generator as gen  # noqa: E402
from shardaccum_real import genlib  # noqa: E402
from shardaccum_real.oracle import UnitPiece, Verdict, check_tensor  # noqa: E402

BOUND = 1e-6


def test_exact_sums_are_correct_and_errors_above_the_bound_wrong() -> None:
    v = Verdict(bound=BOUND)
    v.add(0, 0.0, 4.0, 0)
    v.add(1, 0.0, 9.0, 0)
    assert v.correct and v.rel_err == 0 and v.max_unit_rel_err == 0
    v.add(1, (2e-6 * 3) ** 2, 0.0, 0)  # unit 1's second piece: error 2e-6 relative to ||ref|| 3
    assert v.max_unit_rel_err == pytest.approx(2e-6) and not v.correct


def test_one_bad_unit_of_many_is_wrong_though_the_whole_is_within_the_bound() -> None:
    v = Verdict(bound=BOUND)
    for u in range(100):
        v.add(u, 0.0, 1e6, 0)
    v.add(100, (5e-6) ** 2, 1.0, 0)  # within the bound over the whole, not in unit 100
    assert v.rel_err < BOUND < v.max_unit_rel_err
    assert not v.correct


def test_a_non_finite_element_or_nan_error_is_wrong() -> None:
    v = Verdict(bound=BOUND)
    v.add(0, 0.0, 1.0, 1)
    assert v.rel_err == 0 and not v.correct
    w = Verdict(bound=BOUND)
    w.add(0, math.nan, 1.0, 0)
    assert w.max_unit_rel_err == math.inf and not w.correct


def test_a_zero_reference_judges_the_absolute_error() -> None:
    v = Verdict(bound=BOUND)
    v.add(0, 0.0, 0.0, 0)
    assert v.correct
    v.add(0, 1e-10, 0.0, 0)
    assert v.rel_err == pytest.approx(1e-5) and not v.correct


def test_merge_keeps_each_ranks_unit_maximum() -> None:
    a, b = Verdict(bound=BOUND), Verdict(bound=BOUND)
    a.add(0, 0.0, 1.0, 0)
    b.add(0, (3e-6) ** 2, 1e6, 0)  # rank b's unit 0: 3e-9 relative; summed with a's it would change
    b.add(1, (2e-6) ** 2, 1.0, 0)
    a.merge(b)
    assert a.max_unit_rel_err == pytest.approx(2e-6) and not a.correct
    assert a.ref_norm2 == 1.0 + 1e6 + 1.0


def test_for_case_takes_the_librarys_bound() -> None:
    lib = genlib.load(built_gen_lib())
    assert Verdict.for_case(lib, (0, 0, 0), 0, 4, 2).bound == 1.1920928955078125e-07


def test_check_tensor_on_cpu_judges_a_lost_micro_batch_wrong() -> None:
    torch = pytest.importorskip("torch")
    lib = genlib.load(built_gen_lib())
    key = gen.OracleKey(1, 0, 4, 1, 2, 16384, gen.DYADIC, gen.FP32, 4, 16384)
    exact = torch.from_numpy(gen.expected_values(key, 0, key.numel).astype(np.float32)).reshape(128, 128)
    ok = Verdict.for_case(lib, (0, 0, 0), 0, 4, 1)
    ok.check(lib, key, UnitPiece(2, 0, key.numel), exact)
    assert ok.correct and ok.rel_err == 0
    # only the last of the K=4 micro-batches kept (SSSS, pytorch#73784)
    last = torch.from_numpy(gen.grad_values(gen.GradKey(1, 0, 3, 0, 2, key.numel, shard=key.shard), 0, key.numel))
    bad = Verdict.for_case(lib, (0, 0, 0), 0, 4, 1)
    bad.add(2, *check_tensor(lib, key, 0, last))
    assert not bad.correct and bad.rel_err == pytest.approx(math.sqrt(3 / 4), abs=0.01)
