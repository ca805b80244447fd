"""The suite's generator and oracle as the runner uses them, behind one small interface (so tests can
inject a fake): libshardaccum_gen (genlib) fills each backward's gradient on the device, the numpy
generator is bit-identical for CPU tensors, and oracle.Verdict judges the accumulated shards."""

from __future__ import annotations

from .dtypes import CODES


class SuiteGen:
    """The real thing: genlib.load(path) (SHARDACCUM_GEN_LIB, else build/capi, build-host/capi)."""

    def __init__(self, path: str | None = None):
        from . import genlib
        self.lib = genlib.load(path)
        self.path = str(self.lib.path)

    def shard_numel(self, numel: int, world: int) -> int:
        from . import generator
        return generator.shard_numel(numel, world)

    def dyadic_max(self, triple, k: int, world: int) -> int:
        from . import oracle
        return oracle.dyadic_range(self.lib, (CODES[triple.grad], CODES[triple.reduce], CODES[triple.accum]), k, world)

    def fill(self, out, key: dict, first: int) -> None:
        """out (a contiguous fp32/bf16 tensor) = g(key, first + j) reshaped: on CUDA sa_grad_fill_cuda on
        the current stream (the backward's), on the CPU the numpy generator."""
        import torch
        from . import generator
        k = generator.GradKey(**key)
        code = {torch.float32: 0, torch.bfloat16: 1}[out.dtype]
        if out.is_cuda:
            stream = torch.cuda.current_stream(out.device).cuda_stream
            self.lib.grad_fill_cuda(k, first, out.numel(), out.data_ptr(), code, stream)
        else:
            vals = torch.from_numpy(generator.grad_values(k, first, out.numel()))
            out.copy_(vals.view(out.shape))  # bf16: the values are dyadic, exact in bf16

    def verdict(self, triple, mode: int, k: int, world: int, okey_of, pieces: list):
        """An oracle.Verdict of this rank's pieces [(unit, first, tensor)]; okey_of(unit) -> OracleKey fields."""
        from . import generator, oracle
        v = oracle.Verdict.for_case(self.lib, (CODES[triple.grad], CODES[triple.reduce], CODES[triple.accum]),
                                    mode, k, world)
        for unit, first, t in pieces:
            v.check(self.lib, generator.OracleKey(**okey_of(unit)), oracle.UnitPiece(unit, first, t.numel()), t)
        return v
