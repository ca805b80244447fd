"""The workload as torch modules: one module per layout unit holding that unit's parameters (described
names and shapes), and per parameter a custom autograd Function whose backward returns the suite's
generator values as the parameter's gradient, so FSDP's hooks fire as in training. Needs torch."""

from __future__ import annotations

import torch
from torch import nn


class StepState:
    """Which gradient the next backward produces: set by the driver before each micro-batch."""

    def __init__(self, seed: int, rank: int, world: int, mode: int, dyadic_max: int, shard_of):
        self.seed, self.rank, self.world, self.mode, self.dyadic_max = seed, rank, world, mode, dyadic_max
        self.shard_of = shard_of  # numel -> shard_numel(numel, world)
        self.step = self.mb = 0

    def key(self, unit) -> dict:
        """The generator key of spec B (sa_grad_key's fields) for `unit` at the current step/mb."""
        return {"seed": self.seed, "step": self.step, "mb": self.mb, "rank": self.rank, "unit": unit.index,
                "numel": unit.numel, "mode": self.mode, "dyadic_max": self.dyadic_max,
                "shard": self.shard_of(unit.numel)}


def as_2d(shape) -> tuple:
    """The GEMM view of a parameter: [rows, cols] = [shape[0], numel/shape[0]]; 1-D [n] as [1, n]."""
    if len(shape) == 1:
        return (1, shape[0])
    cols = 1
    for s in shape[1:]:
        cols *= s
    return (shape[0], cols)


class _Inject(torch.autograd.Function):
    """forward: passes the activation on (plus, with tokens, a [T, cols] x [cols, rows] GEMM: 2*T*numel
    FLOPs); backward: the activation's gradient passes on, the parameter's gradient is the generator's
    values (plus, with tokens, the two backward GEMMs, 4*T*numel FLOPs, the weight gradient's written
    into the gradient tensor and then overwritten by the generator)."""

    @staticmethod
    def forward(ctx, x, weight, unit_param):
        mod, unit, param = unit_param
        ctx.unit_param, ctx.meta = unit_param, (weight.dtype, weight.device)
        if mod.tokens > 0:
            # Saved as nn.Linear saves its weight: FSDP re-gathers it before this backward runs.
            ctx.save_for_backward(weight)
            rows, cols = as_2d(param.shape)
            torch.mm(mod.token_buffer(cols, weight), weight.detach().reshape(rows, cols).t())
        return x.clone()

    @staticmethod
    def backward(ctx, grad_x):
        mod, unit, param = ctx.unit_param
        dtype, device = ctx.meta
        grad_w = torch.empty(param.shape, dtype=dtype, device=device)
        if mod.tokens > 0:
            (w,) = ctx.saved_tensors
            rows, cols = as_2d(param.shape)
            g_out = mod.token_buffer(rows, w)
            torch.mm(g_out, w.detach().reshape(rows, cols))           # d activation: 2*T*numel
            # d weight: 2*T*numel, written into the gradient itself, as nn.Linear's backward makes
            # its weight gradient (and the suite's GEMM, beta 1 into the gradient), then overwritten
            # by the generator's values. Into a temporary of its own it held one more
            # parameter-sized buffer at the real peaks (256 MiB on uniform:16x64M, by the memory
            # history of 2026-12-04) that neither FSDP nor the suite has.
            torch.mm(g_out.t(), mod.token_buffer(cols, w), out=grad_w.view(rows, cols))
        mod.fill(grad_w, mod.state.key(unit), param.offset)
        return grad_x, grad_w, None


def sanitized(name: str) -> str:
    """A parameter attribute name for a described name (dots are not allowed in attribute names)."""
    return name.replace(".", "__")


class UnitModule(nn.Module):
    """One FSDP unit: its parameters in the described order, so FSDP1's flat parameter holds element j of
    parameter p at unit element offset_p + j, as spec A's offsets say."""

    def __init__(self, unit, state: StepState, fill, dtype, device, tokens: int = 0):
        super().__init__()
        self.unit, self.state, self.fill, self.tokens = unit, state, fill, tokens
        self._tokens_cache: dict = {}
        self.described = []  # (attribute name, layout.Param)
        for p in unit.params:
            attr = sanitized(p.name)
            self.register_parameter(attr, nn.Parameter(torch.zeros(p.shape, dtype=dtype, device=device)))
            self.described.append((attr, p))

    def token_buffer(self, cols: int, like):
        """A [T, cols] activation of ones (dtype and device of `like`), made once per width."""
        key = (cols, like.dtype, like.device)
        if key not in self._tokens_cache:
            self._tokens_cache[key] = torch.ones(self.tokens, cols, dtype=like.dtype, device=like.device)
        return self._tokens_cache[key]

    def forward(self, x):
        for attr, p in self.described:
            x = _Inject.apply(x, getattr(self, attr), (self, self.unit, p))
        return x


class Workload(nn.Module):
    """The units in layout order; forward visits them first to last, so backward runs last to first."""

    def __init__(self, layout, state: StepState, fill, dtype, device, tokens: int = 0):
        super().__init__()
        self.units = nn.ModuleList(UnitModule(u, state, fill, dtype, device, tokens) for u in layout.units)

    def forward(self, x):
        for u in self.units:
            x = u(x)
        return x
