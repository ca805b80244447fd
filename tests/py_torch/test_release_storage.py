"""measure.release_storage frees FSDP1's flat parameters and the modules that own them. Without it they
outlive the case: FlatParameter._modules / _param_infos point back at the modules that hold it, a
cycle through a tensor's __dict__ that gc does not collect (on one H200 every FSDP1 case left its
4.3 GB to the next). FSDP1 runs on the CPU here with device_id=cpu on the session's gloo group."""

from __future__ import annotations

import gc
import weakref

import pytest

torch = pytest.importorskip("torch")


class _Unit(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(256, 256))

    def forward(self, x):
        return x * self.w.sum()


def _fsdp1_step(release: bool):
    """One FSDP1 step (a no-sync micro-batch and a synced one); weakrefs to its flat params and modules."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    from shardaccum_real import measure
    f = FSDP(torch.nn.Sequential(_Unit(), _Unit()), sharding_strategy=ShardingStrategy.FULL_SHARD,
             auto_wrap_policy=ModuleWrapPolicy({_Unit}), device_id=torch.device("cpu"), use_orig_params=False)
    x = torch.ones(1, requires_grad=True)
    with f.no_sync():
        f(x).sum().backward()
    f(x).sum().backward()
    params, modules = [weakref.ref(p) for p in f.parameters()], [weakref.ref(m) for m in f.modules()]
    if release:
        measure.release_storage(f)
    return params, modules


@pytest.mark.parametrize("release", [False, True])
def test_release_storage_frees_fsdp1_flat_params_and_their_modules(cpu_device, release):
    params, modules = _fsdp1_step(release)
    gc.collect()
    alive = sum(r() is not None for r in params) + sum(r() is not None for r in modules)
    if release:
        assert alive == 0, f"{alive} flat parameters or modules outlived the case"
    else:  # the leak this guards against: if torch ever collects the cycle itself, this says so
        assert alive > 0, "torch now frees FSDP1's flat parameters by itself: release_storage's dict clear may go"
