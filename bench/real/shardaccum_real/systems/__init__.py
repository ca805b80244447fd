"""The real systems the runner drives: FSDP2 (fsdp2.py), FSDP1 (fsdp1.py) and DeepSpeed ZeRO-3/ZeRO-2
(zero.py, its torch-free part zero_config.py); each wraps a model.Workload behind base.System's
interface (step_context, micro_batch, forward_backward, end_micro_batch, zero_grad, pieces, settings)."""
