"""The real systems the runner drives: FSDP2 (fsdp2.py) and FSDP1 (fsdp1.py); each wraps a
model.Workload and exposes the same small interface (micro_batch, zero_grad, pieces, settings)."""
