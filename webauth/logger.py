"""Logging in Auth.js's format through the ``webauth`` logger.

``error`` writes ``[auth][error] <type>: <message>`` followed by the cause, at
level ERROR; an error the visitor caused (``error.user_caused``: a wrong
password or code, an expired form or link, a refused passkey, a stale OAuth
callback) is one line at level WARNING instead, ``[auth][warn][<type>]
<message>``, with no cause or traceback. ``warn`` writes ``[auth][warn][<code>]``;
``debug`` (only with ``debug=True`` or a custom ``debug`` function) writes
``[auth][debug]: <message>`` and its metadata. Every message ends with where to
read more: the type's or code's anchor in webauth's ``docs/errors.md``
(:func:`webauth.errors.doc_link`). The ``logger`` option replaces any of the
three functions individually (a custom ``error`` function receives every error,
those the visitor caused included, as Auth.js's does). Secrets are never passed
to the logger by webauth itself.

Log lines cannot be forged. Messages quote what clients and providers send (an
``error_description``, a provider id from the URL, a ``callbackUrl``), so the
built-in functions write every piece of text through :func:`log_safe`: one
message is one line, with line breaks, ANSI escapes and other control characters
shown as backslash escapes, and long text cut. Stack traces keep their lines,
but each exception's message (and note) in them is escaped the same way, and so
is any traceback attached to a record of the ``webauth`` logger. Metadata and
details are JSON, which escapes control characters itself. Only this module
writes to Python's ``logging``; everything else logs through ``config.logger``.
A custom function given in the ``logger`` option receives the error object as
raised; use :func:`log_safe` when it writes text from it to a log.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable, Mapping, Sequence

from .errors import LOG_TEXT_LIMIT, AuthError, doc_link, log_safe

__all__ = ["AuthLogger", "format_exception", "get_logger", "log_safe", "logger"]

logger = logging.getLogger("webauth")

#: The most characters of one JSON block (``[auth][details]``, debug metadata).
JSON_LIMIT = 8 * LOG_TEXT_LIMIT

_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _lines(text: str) -> str:
    """Each line of *text* escaped; the line breaks between them kept."""
    return "\n".join(log_safe(line, None) for line in text.split("\n"))


def _exception_chunks(exc: traceback.TracebackException) -> list[str]:
    """One exception of a chain: its frames, then its message and notes, each one line."""
    chunks = []
    if exc.stack:
        chunks.append("Traceback (most recent call last):\n")
        chunks.extend(_lines(frame) for frame in exc.stack.format())
    # format_exception_only yields one chunk per line it means to print (the
    # message, a SyntaxError's position), each escaped whole: text in them is
    # anyone's. It would split notes at their line breaks, so they are added here.
    notes, exc.__notes__ = exc.__notes__, None
    chunks.extend(log_safe(c.rstrip("\n")) + "\n" for c in exc.format_exception_only())
    if isinstance(notes, Sequence) and not isinstance(notes, str):
        chunks.extend(log_safe(note) + "\n" for note in notes)
    elif notes is not None:
        chunks.append(log_safe(f"__notes__ is not a sequence: {notes!r}") + "\n")
    for number, member in enumerate(getattr(exc, "exceptions", None) or (), 1):
        chunks.append(f"--- sub-exception {number} of the group ---\n")
        chunks.extend(_chain_chunks(member))
    return chunks


def _chain_chunks(exc: traceback.TracebackException) -> list[str]:
    # Each entry: an exception and the sentence linking it to the one it follows.
    chain: list[tuple[str | None, traceback.TracebackException]] = []
    current: traceback.TracebackException | None = exc
    while current is not None:
        if current.__cause__ is not None:
            chain.append((_CAUSE, current))
            current = current.__cause__
        elif current.__context__ is not None and not current.__suppress_context__:
            chain.append((_CONTEXT, current))
            current = current.__context__
        else:
            chain.append((None, current))
            current = None
    chunks: list[str] = []
    for link, member in reversed(chain):  # the first cause first, as Python prints it
        if link is not None:
            chunks.append(link)
        chunks.extend(_exception_chunks(member))
    return chunks


def format_exception(error: BaseException) -> str:
    """*error*'s traceback with its chain, as :func:`traceback.format_exception`,
    except that every exception's message and note is one escaped line
    (:func:`log_safe`): a message that quotes a client cannot start a log line."""
    return "".join(_chain_chunks(traceback.TracebackException.from_exception(error))).rstrip()


class _SafeTracebacks(logging.Filter):
    """Renders a record's attached traceback with :func:`format_exception`.

    Handlers' formatters print ``record.exc_text`` when it is set, instead of
    formatting the exception themselves with its raw messages.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = format_exception(record.exc_info[1])
        return True


logger.addFilter(_SafeTracebacks())


def get_logger(name: str) -> logging.Logger:
    """A child of the ``webauth`` logger (``webauth.<name>``) with the same safe tracebacks.

    For modules that log outside Auth.js's format (the rate limiter). A logger's
    filters do not apply to records its children pass up, so each child gets its
    own. Messages must still be passed through :func:`log_safe` (or ``%r``) when
    they quote a client.
    """
    child = logging.getLogger(f"webauth.{name}")
    if not any(isinstance(f, _SafeTracebacks) for f in child.filters):
        child.addFilter(_SafeTracebacks())
    return child


def _json(value: object) -> str:
    # JSON escapes control characters in strings (and ensure_ascii every
    # non-ASCII one): the block may span lines, none of them a client's.
    text = json.dumps(value, default=str, indent=2)
    cut = len(text) - JSON_LIMIT
    return text if cut <= 0 else f"{text[:JSON_LIMIT]}... [{cut} more characters]"


def _default_error(error: BaseException) -> None:
    name = error.type if isinstance(error, AuthError) else type(error).__name__
    # An AuthError's own text is already one escaped line; anything else is escaped here.
    text = str(error) if type(error).__str__ is AuthError.__str__ else log_safe(str(error))
    if getattr(error, "user_caused", False) is True:
        # What a visitor did is no fault of the server: one line, no traceback.
        logger.warning("[auth][warn][%s] %s", log_safe(name), text)
        return
    logger.error("[auth][error] %s: %s", log_safe(name), text)
    cause = getattr(error, "cause", None)
    err = cause.get("err") if isinstance(cause, Mapping) else None
    if isinstance(err, BaseException):
        logger.error("[auth][cause]: %s", format_exception(err))
        details = {k: v for k, v in cause.items() if k != "err"} if cause else {}
        if details:
            logger.error("[auth][details]: %s", _json(details))
    elif error.__traceback__ is not None:
        logger.error("%s", _lines("".join(traceback.format_tb(error.__traceback__)).rstrip()))


def _default_warn(code: str) -> None:
    logger.warning("[auth][warn][%s] Read more: %s", log_safe(code), doc_link(log_safe(code)))


def _default_debug(message: str, metadata: object = None) -> None:
    if metadata is None:
        logger.debug("[auth][debug]: %s", log_safe(message))
    else:
        logger.debug("[auth][debug]: %s %s", log_safe(message), _json(metadata))


class AuthLogger:
    """The logger a configuration uses: built-in functions, each replaceable."""

    __slots__ = ("_debug", "_error", "_warn", "debug_enabled")

    def __init__(
        self,
        *,
        debug_enabled: bool = False,
        error: Callable[..., object] | None = None,
        warn: Callable[..., object] | None = None,
        debug: Callable[..., object] | None = None,
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
            # The traceback is rendered escaped by _SafeTracebacks.
            logger.exception("webauth: the custom error logger raised")

    @property
    def warn_function(self) -> Callable[..., object]:
        """The function :meth:`warn` calls (the built-in one, or the ``logger`` option's)."""
        return self._warn

    def warn(self, code: str) -> None:
        """Log a warning by its Auth.js code (``csrf-disabled``, ``debug-enabled``, ...)."""
        try:
            self._warn(code)
        except Exception:
            logger.exception("webauth: the custom warn logger raised")

    def debug(self, message: str, metadata: object = None) -> None:
        """Log a debug message when debugging is on."""
        if not self.debug_enabled:
            return
        try:
            (self._debug or _default_debug)(message, metadata)
        except Exception:
            logger.exception("webauth: the custom debug logger raised")
