"""Logging in Auth.js's format through the ``webauth`` logger.

``error`` writes ``[auth][error] <type>: <message>`` followed by the cause;
``warn`` writes ``[auth][warn][<code>]``; ``debug`` (only with ``debug=True`` or a
custom ``debug`` function) writes ``[auth][debug]: <message>`` and its metadata.
The ``logger`` option replaces any of the three functions individually.
Secrets are never passed to the logger by webauth itself.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from .errors import AuthError

__all__ = ["AuthLogger", "logger"]

logger = logging.getLogger("webauth")

WARNINGS_URL = "https://warnings.authjs.dev"


def _default_error(error: BaseException) -> None:
    name = error.type if isinstance(error, AuthError) else type(error).__name__
    logger.error("[auth][error] %s: %s", name, error)
    cause = getattr(error, "cause", None)
    err = cause.get("err") if isinstance(cause, Mapping) else None
    if isinstance(err, BaseException):
        stack = "".join(traceback.format_exception(err)).rstrip()
        logger.error("[auth][cause]: %s", stack)
        details = {k: v for k, v in cause.items() if k != "err"} if cause else {}
        if details:
            logger.error("[auth][details]: %s", json.dumps(details, default=str, indent=2))
    elif error.__traceback__ is not None:
        logger.error("%s", "".join(traceback.format_tb(error.__traceback__)).rstrip())


def _default_warn(code: str) -> None:
    logger.warning("[auth][warn][%s] Read more: %s", code, WARNINGS_URL)


def _default_debug(message: str, metadata: Any = None) -> None:
    if metadata is None:
        logger.debug("[auth][debug]: %s", message)
    else:
        logger.debug("[auth][debug]: %s %s", message, json.dumps(metadata, default=str, indent=2))


class AuthLogger:
    """The logger a configuration uses: built-in functions, each replaceable."""

    __slots__ = ("_debug", "_error", "_warn", "debug_enabled")

    def __init__(
        self,
        *,
        debug_enabled: bool = False,
        error: Callable[..., Any] | None = None,
        warn: Callable[..., Any] | None = None,
        debug: Callable[..., Any] | None = None,
    ) -> None:
        self._error = error or _default_error
        self._warn = warn or _default_warn
        self._debug = debug
        # A custom debug function is always called, as in Auth.js.
        self.debug_enabled = debug_enabled or debug is not None

    def error(self, error: BaseException) -> None:
        """Log an error (never raises)."""
        try:
            self._error(error)
        except Exception:  # a broken custom logger must not break a sign-in
            logger.exception("webauth: the custom error logger raised")

    def warn(self, code: str) -> None:
        """Log a warning by its Auth.js code (``csrf-disabled``, ``debug-enabled``, ...)."""
        try:
            self._warn(code)
        except Exception:
            logger.exception("webauth: the custom warn logger raised")

    def debug(self, message: str, metadata: Any = None) -> None:
        """Log a debug message when debugging is on."""
        if not self.debug_enabled:
            return
        try:
            (self._debug or _default_debug)(message, metadata)
        except Exception:
            logger.exception("webauth: the custom debug logger raised")
