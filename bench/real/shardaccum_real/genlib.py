"""ctypes over libshardaccum_gen.so (capi/shardaccum_gen.h): the suite's own generator, exact
reference, oracle sums and bound, for the runner (bench/real/run.py).

Keys are any objects with the C struct's field names (generator.GradKey / OracleKey). Device
functions take raw pointers (``tensor.data_ptr()``) and a stream handle
(``torch.cuda.current_stream().cuda_stream``) as ints, so this module imports neither torch nor,
until a host helper that returns an array is called, numpy.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

ABI = 1  # SA_GEN_ABI this module was written for
LIB_NAME = "libshardaccum_gen.so"
ENV = "SHARDACCUM_GEN_LIB"
ROOT = Path(__file__).resolve().parents[3]
SEARCH = (ROOT / "build" / "capi", ROOT / "build-host" / "capi")  # default preset first
BUILD_HINT = ("build it: cmake --preset default && cmake --build --preset default --target shardaccum_gen "
              "(or the host preset, without the CUDA functions)")


class GenLibError(RuntimeError):
    """The library is missing, of another ABI, or a CUDA function returned an error code."""


class _GradKey(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("step", ctypes.c_uint32), ("mb", ctypes.c_uint32),
                ("rank", ctypes.c_uint32), ("unit", ctypes.c_uint32), ("numel", ctypes.c_uint64),
                ("mode", ctypes.c_int32), ("dyadic_max", ctypes.c_int32), ("shard", ctypes.c_uint64)]


class _OracleKey(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("step", ctypes.c_uint32), ("k", ctypes.c_uint32),
                ("world_size", ctypes.c_uint32), ("unit", ctypes.c_uint32), ("numel", ctypes.c_uint64),
                ("mode", ctypes.c_int32), ("grad_dtype", ctypes.c_int32), ("dyadic_max", ctypes.c_int32),
                ("shard", ctypes.c_uint64)]


def _struct(cls, key):
    return cls(**{name: getattr(key, name) for name, _ in cls._fields_})


_u64, _i32, _vp = ctypes.c_uint64, ctypes.c_int32, ctypes.c_void_p
_d3 = ctypes.POINTER(ctypes.c_double)
_SIGNATURES = {  # name: (restype, argtypes), as capi/shardaccum_gen.h declares them
    "sa_gen_abi": (ctypes.c_int, []),
    "sa_gen_has_cuda": (ctypes.c_int, []),
    "sa_grad_fill_host": (None, [ctypes.POINTER(_GradKey), _u64, _u64, _vp]),
    "sa_expected_fill_host": (None, [ctypes.POINTER(_OracleKey), _u64, _u64, _vp]),
    "sa_compare_host": (None, [ctypes.POINTER(_OracleKey), _u64, _u64, _vp, _i32, _d3]),
    "sa_grad_fill_cuda": (ctypes.c_int, [ctypes.POINTER(_GradKey), _u64, _u64, _vp, _i32, _vp]),
    "sa_compare_cuda": (ctypes.c_int, [ctypes.POINTER(_OracleKey), _u64, _u64, _vp, _i32, _d3, _vp]),
    "sa_dyadic_range": (ctypes.c_uint8, [_i32] * 5),
    "sa_error_bound": (ctypes.c_double, [_i32] * 6),
}


class GenLib:
    """The loaded library (see load()). path: the file loaded."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self._lib = ctypes.CDLL(str(self.path))
        except OSError as e:
            raise GenLibError(f"cannot load {self.path}: {e}; {BUILD_HINT}") from e
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(self._lib, name)
            except AttributeError as e:
                raise GenLibError(f"{self.path} lacks {name}: not the ABI {ABI} library; {BUILD_HINT}") from e
            fn.restype, fn.argtypes = restype, argtypes
        abi = self._lib.sa_gen_abi()
        if abi != ABI:
            raise GenLibError(f"{self.path} has ABI {abi}, this module needs {ABI}; rebuild it: {BUILD_HINT}")

    def has_cuda(self) -> bool:
        """Whether the library was built with the CUDA functions."""
        return bool(self._lib.sa_gen_has_cuda())

    def grad_fill_host(self, key, first: int, count: int, out_ptr: int | None = None):
        """g(key, first + j), j < count, as float32 into host memory at out_ptr (count floats);
        without out_ptr into a new numpy array of shape [count], which it returns."""
        arr = None
        if out_ptr is None:
            import numpy as np
            arr = np.empty(count, dtype=np.float32)
            out_ptr = arr.ctypes.data
        self._lib.sa_grad_fill_host(ctypes.byref(_struct(_GradKey, key)), first, count, out_ptr)
        return arr

    def expected_fill_host(self, key, first: int, count: int, out_ptr: int | None = None):
        """The exact expected unit elements first + j as float64 (count doubles at out_ptr, or a
        new numpy array of shape [count], returned)."""
        arr = None
        if out_ptr is None:
            import numpy as np
            arr = np.empty(count, dtype=np.float64)
            out_ptr = arr.ctypes.data
        self._lib.sa_expected_fill_host(ctypes.byref(_struct(_OracleKey, key)), first, count, out_ptr)
        return arr

    def compare_host(self, key, first: int, count: int, x_ptr: int, x_dtype: int) -> tuple[float, float, int]:
        """(sum (x-e)^2 over finite x, sum e^2, count of non-finite x) over count elements of host
        memory at x_ptr, fp32 (x_dtype 0) or bf16 (1), held as unit elements first + j."""
        out3 = (ctypes.c_double * 3)()
        self._lib.sa_compare_host(ctypes.byref(_struct(_OracleKey, key)), first, count, x_ptr, x_dtype, out3)
        return out3[0], out3[1], int(out3[2])

    def grad_fill_cuda(self, key, first: int, count: int, out_ptr: int, out_dtype: int, stream: int = 0) -> None:
        """g(key, first + j) into device memory at out_ptr, fp32 (0) or bf16 (1), asynchronously on
        the cudaStream_t `stream` (0: the legacy default). Raises GenLibError on a nonzero code
        (-1: built without CUDA; else the cudaError_t)."""
        rc = self._lib.sa_grad_fill_cuda(ctypes.byref(_struct(_GradKey, key)), first, count, out_ptr, out_dtype,
                                         stream or None)
        _check(rc, "sa_grad_fill_cuda", self.path)

    def compare_cuda(self, key, first: int, count: int, x_ptr: int, x_dtype: int,
                     stream: int = 0) -> tuple[float, float, int]:
        """compare_host over device memory, on `stream` (it synchronises it). Raises GenLibError on
        a nonzero code."""
        out3 = (ctypes.c_double * 3)()
        rc = self._lib.sa_compare_cuda(ctypes.byref(_struct(_OracleKey, key)), first, count, x_ptr, x_dtype,
                                       out3, stream or None)
        _check(rc, "sa_compare_cuda", self.path)
        return out3[0], out3[1], int(out3[2])

    def dyadic_range(self, param: int, reduce: int, accum: int, k: int, world: int) -> int:
        """strategies/oracle.hpp dyadic_range of the dtype codes (0 fp32, 1 bf16), K and world."""
        return int(self._lib.sa_dyadic_range(param, reduce, accum, k, world))

    def error_bound(self, param: int, reduce: int, accum: int, mode: int, k: int, world: int) -> float:
        """strategies/oracle.hpp error_bound: the case's relative-error bound (mode 0 dyadic, 1 random)."""
        return float(self._lib.sa_error_bound(param, reduce, accum, mode, k, world))


def _check(rc: int, name: str, path: Path) -> None:
    if rc == -1:
        raise GenLibError(f"{name}: {path} was built without CUDA (the host preset); {BUILD_HINT}")
    if rc != 0:
        raise GenLibError(f"{name} failed: cudaError_t {rc}")


def find(path: str | os.PathLike | None = None) -> Path:
    """The library's path: `path`, else $SHARDACCUM_GEN_LIB, else the first of build/capi/ and
    build-host/capi/ under the repository root that has it. Raises GenLibError naming where it
    looked and how to build it."""
    given = path if path is not None else os.environ.get(ENV) or None
    if given is not None:
        p = Path(given)
        if not p.is_file():
            source = "path" if path is not None else f"${ENV}"
            raise GenLibError(f"{LIB_NAME} not found at {p} (from {source}); {BUILD_HINT}")
        return p
    for folder in SEARCH:
        if (folder / LIB_NAME).is_file():
            return folder / LIB_NAME
    raise GenLibError(f"{LIB_NAME} not found in {', '.join(str(f) for f in SEARCH)} "
                      f"(nor set in ${ENV}); {BUILD_HINT}")


def load(path: str | os.PathLike | None = None) -> GenLib:
    """The library (see find()), loaded and checked: every function present, sa_gen_abi() == ABI.
    Raises GenLibError otherwise."""
    return GenLib(find(path))
