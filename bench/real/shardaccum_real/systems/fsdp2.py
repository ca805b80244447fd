"""FSDP2 (torch.distributed.fsdp.fully_shard): one fully_shard per layout unit and one for the root,
CPUOffloadPolicy(pin_memory=True) for offload cpu (pin_memory=False for cpu-pageable), MixedPrecisionPolicy from the dtype plan, and
set_requires_gradient_sync per micro-batch. Needs torch."""

from __future__ import annotations

import contextlib

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

from .base import System

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
RESHARD_AFTER_FORWARD = True  # fully_shard's default, passed explicitly so the JSON states what ran


class FSDP2(System):
    """The workload under fully_shard. `device` is the compute device; the workload is built there."""

    def __init__(self, workload, plan, offload: str, device: torch.device, world: int):
        mp = MixedPrecisionPolicy(param_dtype=DTYPES.get(plan.param_dtype), reduce_dtype=DTYPES.get(plan.reduce_dtype))
        # --device cpu (development mode) has no pinned memory: there the policy pins nothing, and says so.
        pin = device.type == "cuda" and offload == "cpu"
        off = CPUOffloadPolicy(pin_memory=pin) if offload != "none" else OffloadPolicy()
        mesh = init_device_mesh(device.type, (world,))
        kw = dict(mesh=mesh, reshard_after_forward=RESHARD_AFTER_FORWARD, mp_policy=mp, offload_policy=off)
        for unit in workload.units:
            fully_shard(unit, **kw)
        fully_shard(workload, **kw)
        self.module, self.world, self.offload = workload, world, offload
        self._settings = {"api": "torch.distributed.fsdp.fully_shard per unit + root",
                          "reshard_after_forward": RESHARD_AFTER_FORWARD,
                          "mp_policy": {"param_dtype": plan.param_dtype, "reduce_dtype": plan.reduce_dtype,
                                        "output_dtype": None, "cast_forward_inputs": True},
                          "offload_policy": f"CPUOffloadPolicy(pin_memory={pin})" if offload != "none"
                          else "OffloadPolicy() (none)",
                          "gradient_sync": "set_requires_gradient_sync(sync) before each micro-batch"}

    def micro_batch(self, sync: bool):
        """The context of one micro-batch: FSDP2 takes the flag before the forward, no context needed."""
        self.module.set_requires_gradient_sync(sync)
        return contextlib.nullcontext()


    def pieces(self, rank: int) -> list:
        """This rank's accumulated gradient as (unit index, first unit element, 1-D tensor) pieces: each
        parameter's DTensor grad is a dim-0 shard (torch.chunk: ceil(rows/N) rows a rank, the last ranks
        fewer or none), on the CPU when offloaded."""
        out = []
        for unit_mod in self.module.units:
            for attr, p in unit_mod.described:
                g = getattr(unit_mod, attr).grad
                if g is None:
                    raise RuntimeError(f"fsdp2: {p.name} has no gradient after the step")
                local = g.to_local()
                rows = p.shape[0]
                per_row = p.numel // rows
                chunk = -(-rows // self.world)
                have = max(0, min(chunk, rows - rank * chunk))
                if local.shape[0] != have:
                    raise RuntimeError(f"fsdp2: {p.name}: rank {rank} holds {local.shape[0]} rows, expected {have}")
                if have:
                    out.append((unit_mod.unit.index, p.offset + rank * chunk * per_row, local.reshape(-1)))
        return out
