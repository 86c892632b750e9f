"""Emit an event to its Django signal and to the handler in ``WEBAUTH["events"]``."""

from __future__ import annotations

from .conf import Config
from .errors import EventError
from .signals import EVENT_SIGNALS
from .utils import call

__all__ = ["emit"]


def emit(config: Config, name: str, *, sender: str | None = None, **message: object) -> None:
    """Send event *name*; failures are logged as ``EventError`` and swallowed."""
    signal = EVENT_SIGNALS[name]
    if signal.receivers:
        for receiver, result in signal.send_robust(sender=sender, **message):
            if isinstance(result, Exception):
                config.logger.error(
                    EventError(f"receiver {receiver!r} of {name!r} raised", cause={"err": result})
                )
    handler = config.events.get(name)
    if handler is not None:
        handler_message = {k: v for k, v in message.items() if k != "request"}
        try:
            call(handler, **handler_message)
        except Exception as exc:
            config.logger.error(EventError(f"event handler {name!r} raised", cause={"err": exc}))
