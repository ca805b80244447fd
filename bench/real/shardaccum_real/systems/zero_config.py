"""The DeepSpeed side of systems/zero.py that needs neither torch nor deepspeed (tested in CI): the
config of a case, the optimizer named in the JSON, and the profiler range names."""

from __future__ import annotations

# record_function ranges around DeepSpeed's gradient path, which has no Kineto ranges of its own (its
# instrument_w_nvtx ranges are NVTX only): trace.GRAD_RANGES counts copies inside them as gradient
# traffic. With offload_optimizer alone the parameters stay on the GPU, so every copy there is gradient.
GRAD_BACKWARD, GRAD_FLUSH = "DeepSpeed::backward", "DeepSpeed::coalesce_flush"
OPTIMIZER = "torch.optim.SGD(lr=0.0), zero_force_ds_cpu_optimizer false"
# DeepSpeed's default log line per step would interleave with the runner's progress.
_QUIET = {"steps_per_print": 2**31 - 1, "wall_clock_breakdown": False}


def config(stage: int, offload: str, k: int, coalesce: bool) -> dict:
    """The DeepSpeed config (dict) of one case: ZeRO `stage`, offload cpu|cpu-pageable|none, K
    micro-batches. overlap_comm, contiguous_gradients and reduce_bucket_size are left to DeepSpeed's
    defaults (runtime/zero/config.py) and read back from the engine for the JSON."""
    zero: dict = {"stage": stage}
    if offload != "none":
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": offload == "cpu"}
    return {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1 if coalesce else k,
            "zero_optimization": zero, "zero_force_ds_cpu_optimizer": False,
            "zero_allow_untested_optimizer": True, **_QUIET}
