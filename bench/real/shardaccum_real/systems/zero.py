"""DeepSpeed ZeRO-3 and ZeRO-2 (deepspeed.initialize, 0.19.8) on the runner's workload, with
`offload_optimizer: {device: cpu}` for the offload values cpu (pin_memory true) and cpu-pageable
(pin_memory false; its default changed to true in DeepSpeed#8207). Needs torch and deepspeed.

Schedules (schedule.zero_mode): S^K is DeepSpeed's own loop, gradient_accumulation_steps = K and
engine.step() after every micro-batch (a reduction every micro-step); n^(K-1)S is one
`engine.coalesce_grad_reduction()` block around the K backwards (deepspeed/runtime/engine.py, one
reduction when the block exits) with gradient_accumulation_steps = 1. engine.no_sync() asserts for
stage 2 and 3, so nothing else is a DeepSpeed configuration: cases.product skips those schedules.

The optimizer is torch.optim.SGD(lr=0) with zero_force_ds_cpu_optimizer false (no JIT-built
DeepSpeedCPUAdam: the GPU machines carry a pure-Python wheel, DS_BUILD_OPS=0). The boundary's
engine.step() (the optimizer step, then DeepSpeed's zero_grad) is deferred to zero_grad(), outside the
timed step and after the check reads the gradients; the work DeepSpeed does inside the boundary backward
(grad norm, the fp32 copy into the optimizer's partition: stage3.py _offload_grad_partition_at_boundary)
is timed. The injected gradients ignore the loss, so engine.backward's division of the loss by
gradient_accumulation_steps does not change them (model.py)."""

from __future__ import annotations

import contextlib
import sys

import torch

from .base import System
from .zero_config import GRAD_BACKWARD, GRAD_FLUSH, OPTIMIZER, config


class Zero(System):
    """The workload under a DeepSpeed engine. `schedule` must be S^K or n^(K-1)S (cases.zero_skip_reason)."""

    def __init__(self, workload, plan, offload: str, device: torch.device, world: int, stage: int, schedule: str):
        import deepspeed

        if plan.param_dtype or plan.reduce_dtype or plan.storage != "fp32":
            raise RuntimeError("zero: only fp32-fp32-fp32 is mapped (dtypes.plan refuses the others)")
        self.coalesce = schedule != "S" * len(schedule)
        self.k, self.stage, self.world = len(schedule), stage, world
        cfg = config(stage, offload, self.k, self.coalesce)
        opt = torch.optim.SGD(workload.parameters(), lr=0.0)
        self.engine, _, _, _ = deepspeed.initialize(model=workload, optimizer=opt, config=cfg)
        self.module, self.workload = self.engine, workload
        self._pending_step = False
        zo = self.engine.optimizer
        pinned = getattr(zo, "offload_optimizer_pin_memory", None) if offload != "none" else None
        self._settings = {
            "api": "deepspeed.initialize, engine.backward / engine.step", "deepspeed_version": deepspeed.__version__,
            "stage": stage, "offload_optimizer": cfg["zero_optimization"].get("offload_optimizer", "none"),
            "pin_memory": pinned, "overlap_comm": self.engine.zero_overlap_comm(),
            "contiguous_gradients": self.engine.zero_contiguous_gradients(),
            "reduce_bucket_size": int(self.engine.zero_reduce_bucket_size()),
            "gradient_accumulation_steps": self.engine.gradient_accumulation_steps(), "optimizer": OPTIMIZER,
            "optimizer_class": type(zo).__name__,
            "gradient_sync": ("engine.coalesce_grad_reduction() around the K backwards (one reduction)"
                              if self.coalesce else "a reduction every micro-step, engine.step() after each"),
            "optimizer_step": "deferred to between steps (untimed), after the check",
        }

    @contextlib.contextmanager
    def step_context(self):
        """n^(K-1)S: the whole step inside coalesce_grad_reduction (its exit reduces, inside the timing),
        the exit in the GRAD_FLUSH range for trace.analyse."""
        if not self.coalesce:
            yield
            return
        block = self.engine.coalesce_grad_reduction()
        block.__enter__()
        try:
            yield
        except BaseException:
            if not block.__exit__(*sys.exc_info()):
                raise
        else:
            with torch.profiler.record_function(GRAD_FLUSH):
                block.__exit__(None, None, None)

    def micro_batch(self, sync: bool):
        return contextlib.nullcontext()

    def forward_backward(self, x) -> None:
        """One micro-batch as DeepSpeed's loop has it: engine(x), engine.backward(loss)."""
        loss = self.engine(x).sum()
        with torch.profiler.record_function(GRAD_BACKWARD):
            self.engine.backward(loss)

    def end_micro_batch(self, last: bool) -> None:
        """engine.step() after each micro-batch of S^K but the last; the boundary's step waits for zero_grad."""
        if last:
            self._pending_step = True
        elif not self.coalesce:
            self.engine.step()

    def zero_grad(self) -> None:
        """The deferred boundary engine.step() (optimizer step and DeepSpeed's zero_grad), untimed."""
        if self._pending_step:
            self._pending_step = False
            self.engine.step()

    def pieces(self, rank: int) -> list:
        """This rank's accumulated fp32 gradient as (unit index, first unit element, 1-D tensor) pieces.
        ZeRO-3 partitions each parameter alone: rank r holds flat elements [r*c, r*c + c) of it, c =
        param.partition_numel() = ceil(numel/N), the tail padding cut (stage3.py partition_grads,
        safe_get_local_grad). ZeRO-2 partitions the flat group: a parameter's fragment on this rank starts
        at _hp_mapping.lp_fragment_address.start (utils/tensor_fragment.py get_lp_grad_fragment)."""
        from deepspeed.utils import safe_get_local_grad

        out = []
        for unit_mod in self.workload.units:
            for attr, p in unit_mod.described:
                param = getattr(unit_mod, attr)
                if self.stage == 3:
                    c = param.partition_numel()
                    first = rank * c
                    valid = max(0, min(c, p.numel - first))
                    if valid:
                        g = safe_get_local_grad(param)
                        if g is None:
                            raise RuntimeError(f"zero3: {p.name} has no gradient partition after the step")
                        out.append((unit_mod.unit.index, p.offset + first, g.reshape(-1)[:valid]))
                    continue
                frag = getattr(param, "_hp_mapping", None)
                if frag is None:  # no element of this parameter on this rank
                    continue
                g = frag.get_lp_grad_fragment(param._index_in_param_group)
                out.append((unit_mod.unit.index, p.offset + frag.lp_fragment_address.start, g.reshape(-1)))
        return out

    def release(self) -> None:
        """Removes the engine's hooks and drops its buffers (DeepSpeedEngine.destroy)."""
        self.engine.destroy()
