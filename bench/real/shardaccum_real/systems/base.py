"""What the systems share in the runner's interface (step_context, micro_batch, forward_backward,
end_micro_batch, zero_grad, pieces, settings, release): the wrapped module in `self.module`, the
settings dict in `self._settings`. The defaults are FSDP's loop; DeepSpeed (zero.py) overrides them."""

from __future__ import annotations

import contextlib


class System:
    """Base of systems/fsdp2.FSDP2, fsdp1.FSDP1 and zero.Zero; subclasses set `module` and `_settings`."""

    module = None
    _settings: dict = {}

    def step_context(self):
        """The context around a whole step's micro-batches (timed): none for FSDP."""
        return contextlib.nullcontext()

    def forward_backward(self, x) -> None:
        """One micro-batch: forward, then backward of the output's sum."""
        self.module(x).sum().backward()

    def end_micro_batch(self, last: bool) -> None:
        """After each micro-batch's backward (timed): nothing for FSDP."""

    def release(self) -> None:
        """Before the case's storage is freed: nothing for FSDP."""

    def zero_grad(self) -> None:
        """Sets every parameter's gradient to None (between steps, untimed)."""
        for p in self.module.parameters():
            p.grad = None

    def settings(self) -> dict:
        """A copy of the settings that ran, for the JSON context (`systems`)."""
        return dict(self._settings)
