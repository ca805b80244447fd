"""FSDP1 (FullyShardedDataParallel): FULL_SHARD with one FSDP wrap per layout unit (ModuleWrapPolicy)
under a root wrap, CPUOffload(offload_params=True) for offload cpu, MixedPrecision from the dtype plan,
no_sync() for n micro-batches. At world size 1 FSDP1 switches FULL_SHARD to NO_SHARD
(torch/distributed/fsdp/_init_utils.py _init_core_state); the settings record what ran."""

from __future__ import annotations

import contextlib

import torch
from torch.distributed.fsdp import BackwardPrefetch, CPUOffload, MixedPrecision, ShardingStrategy
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


from ..model import UnitModule
from .base import System

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
BACKWARD_PREFETCH = BackwardPrefetch.BACKWARD_PRE  # FSDP1's default, passed explicitly
FORWARD_PREFETCH = False


class FSDP1(System):
    """The workload under FullyShardedDataParallel; with offload the workload must be built on the CPU."""

    def __init__(self, workload, plan, offload: str, device: torch.device, world: int):
        mp = None
        if plan.param_dtype or plan.reduce_dtype:
            mp = MixedPrecision(param_dtype=DTYPES.get(plan.param_dtype), reduce_dtype=DTYPES.get(plan.reduce_dtype))
        kw = dict(sharding_strategy=ShardingStrategy.FULL_SHARD,
                  cpu_offload=CPUOffload(offload_params=offload == "cpu"), mixed_precision=mp, auto_wrap_policy=ModuleWrapPolicy({UnitModule}),
                  backward_prefetch=BACKWARD_PREFETCH, forward_prefetch=FORWARD_PREFETCH, use_orig_params=False)
        kw["device_id"] = device  # on the CPU too: without it FSDP1's _init_device_handle refuses the CPU
        self.module = FSDP(workload, **kw)
        self.workload, self.world, self.offload = workload, world, offload
        self.units = [m for m in FSDP.fsdp_modules(self.module) if isinstance(m.module, UnitModule)]
        if len(self.units) != len(workload.units):
            raise RuntimeError(f"fsdp1: {len(self.units)} unit wraps for {len(workload.units)} layout units")
        ran = ",".join(sorted({m.sharding_strategy.name for m in self.units}))
        strategy = ("NO_SHARD at world size 1 (FSDP1 switches FULL_SHARD to NO_SHARD)" if ran == "NO_SHARD"
                    else ran)
        self._settings = {"api": "FullyShardedDataParallel, ModuleWrapPolicy per unit + root",
                          "sharding_strategy": strategy, "sharding_strategy_requested": "FULL_SHARD",
                          "backward_prefetch": BACKWARD_PREFETCH.name, "forward_prefetch": FORWARD_PREFETCH,
                          "use_orig_params": False,
                          "mixed_precision": None if mp is None else {"param_dtype": plan.param_dtype,
                                                                      "reduce_dtype": plan.reduce_dtype},
                          "cpu_offload": f"CPUOffload(offload_params={offload == 'cpu'})",
                          "gradient_sync": "no_sync() around n micro-batches"}

    def micro_batch(self, sync: bool):
        return contextlib.nullcontext() if sync else self.module.no_sync()


    def pieces(self, rank: int) -> list:
        """This rank's accumulated gradient as (unit index, first unit element, 1-D tensor) pieces: the
        unit's flat parameter's grad, rank r holding flat elements [r*c, r*c + valid) with c =
        ceil(numel/N) (torch.chunk in FlatParamHandle._get_shard), its padding (_shard_numel_padded) cut."""
        out = []
        for m in self.units:
            unit = m.module.unit
            fp = m._handle.flat_param
            if tuple(fp._fqns) != tuple(a for a, _ in m.module.described):
                raise RuntimeError(f"fsdp1: unit {unit.name}: flat parameter order {fp._fqns} is not the layout's")
            if fp.grad is None:
                raise RuntimeError(f"fsdp1: unit {unit.name} has no gradient after the step")
            g = fp.grad.reshape(-1)
            valid = g.numel() - int(getattr(fp, "_shard_numel_padded", 0))
            first = rank * g.numel() if self.world > 1 and m.sharding_strategy != ShardingStrategy.NO_SHARD else 0
            if fp._unpadded_unsharded_size.numel() != unit.numel:
                raise RuntimeError(f"fsdp1: unit {unit.name}: flat numel "
                                   f"{fp._unpadded_unsharded_size.numel()} != {unit.numel}")
            if valid > 0:
                out.append((unit.index, first, g[:valid]))
        return out
