"""What FSDP2 and FSDP1 share in the runner's system interface (micro_batch, zero_grad, pieces,
settings): the wrapped module in `self.module`, the settings dict in `self._settings`."""

from __future__ import annotations


class System:
    """Base of systems/fsdp2.FSDP2 and systems/fsdp1.FSDP1; subclasses set `module` and `_settings`."""

    module = None
    _settings: dict = {}

    def zero_grad(self) -> None:
        """Sets every parameter's gradient to None (between steps, untimed)."""
        for p in self.module.parameters():
            p.grad = None

    def settings(self) -> dict:
        """A copy of the settings that ran, for the JSON context (`systems`)."""
        return dict(self._settings)
