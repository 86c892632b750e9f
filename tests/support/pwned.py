"""A local fake of the Pwned Passwords range API (tests/test_passwords_breached.py).

A threaded ``http.server`` on 127.0.0.1 at a free port that answers
``GET /range/<5 hex>`` as the service documents it: one ``SUFFIX:COUNT`` line per
known suffix (35 upper-case hex characters), CRLF line ends, ``text/plain``; with
``Add-Padding: true`` the answer is padded with made-up suffixes of count 0 to
:attr:`FakeRange.padding` lines at least, as the real one pads to 800 to 1,000.

What it knows comes from :meth:`FakeRange.breach` (a password and how often it
was seen). :attr:`FakeRange.mode` makes it misbehave:

``"slow"``
    answers after :attr:`FakeRange.delay` seconds (nothing sent before);
``"trickle"``
    sends the status and headers at once, then the body in pieces of
    :attr:`FakeRange.piece` bytes, :attr:`FakeRange.delay` seconds apart;
``"http500"``, ``"http503"``, ``"http429"``
    that status, with a short body;
``"redirect"``
    ``301`` to the same range at another path (which answers normally);
``"html"``, ``"empty"``, ``"latin1"``
    a captive portal's page, an empty 200, a body that is not ASCII;
``"lowercase"``
    the suffixes in lower case (as some mirrors serve them);
``"sized"``
    a valid answer made exactly :attr:`FakeRange.size` bytes long with padding.

Every request is kept (:attr:`FakeRange.requests`: the request line, the path,
the headers and the raw text of both), so a test can say what left the server.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from .local_server import LocalServer, QuietHandler


def sha1_hex(password: str) -> str:
    """The upper-case hex SHA-1 of *password* (UTF-8), as the range API uses it."""
    return hashlib.sha1(password.encode("utf-8")).hexdigest().upper()


class FakeRange(LocalServer):
    """A fake range API; use it as a context manager (it serves while inside)."""

    def __init__(self) -> None:
        self.mode = "normal"
        self.delay = 1.0
        self.piece = 64
        self.size = 0
        self.padding = 800
        self.requests: list[dict[str, Any]] = []
        # prefix -> {suffix: count}
        self.known: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    # -- what it knows ----------------------------------------------------------------

    def breach(self, password: str, count: int) -> str:
        """Make *password* known, seen *count* times (0: listed as padding is); its hash."""
        digest = sha1_hex(password)
        with self._lock:
            self.known.setdefault(digest[:5], {})[digest[5:]] = count
        return digest

    def paths(self) -> list[str]:
        """The path of every request so far."""
        return [r["path"] for r in self.requests]

    # -- the server ---------------------------------------------------------------------

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                headers = dict(self.headers.items())
                with fake._lock:
                    fake.requests.append(
                        {
                            "line": self.requestline,
                            "path": self.path,
                            "headers": headers,
                            "raw": self.requestline + "\r\n" + str(self.headers),
                        }
                    )
                # The client may give up (its timeout): what the test wants.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    fake._answer(self, headers)

        return Handler

    @property
    def url(self) -> str:
        """The range endpoint (``api_url``), with its final slash."""
        return self.origin + "/range/"

    # -- answering ----------------------------------------------------------------------

    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        extra: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        if self.mode == "trickle" and status == 200:
            for start in range(0, len(body), self.piece):
                handler.wfile.write(body[start : start + self.piece])
                handler.wfile.flush()
                time.sleep(self.delay)
        else:
            handler.wfile.write(body)

    def _range(self, prefix: str, padded: bool) -> list[str]:
        with self._lock:
            lines = [f"{s}:{c}" for s, c in self.known.get(prefix, {}).items()]
        if padded:
            while len(lines) < self.padding:
                lines.append(f"{secrets.token_hex(18)[:35].upper()}:0")
        return lines

    def _answer(self, handler: BaseHTTPRequestHandler, headers: dict[str, str]) -> None:
        mode = self.mode
        path = handler.path
        if mode == "slow":
            time.sleep(self.delay)
        if mode.startswith("http"):
            self._send(handler, int(mode[4:]), b"error code: " + mode[4:].encode())
            return
        if mode == "redirect" and path.startswith("/range/"):
            self._send(handler, 301, b"", {"Location": "/moved" + path})
            return
        if mode == "html":
            self._send(handler, 200, b"<html><body>Sign in to the Wi-Fi</body></html>")
            return
        if mode == "empty":
            self._send(handler, 200, b"")
            return
        if mode == "latin1":
            self._send(handler, 200, "ABCDEF:1 café".encode("latin-1"))
            return
        prefix = path.rsplit("/", 1)[-1]
        if not (path.startswith(("/range/", "/moved/range/")) and len(prefix) == 5):
            self._send(handler, 404, b"Not found")
            return
        if any(c not in "0123456789ABCDEF" for c in prefix):
            self._send(handler, 400, b"The hash prefix was not in a valid format")
            return
        padded = headers.get("Add-Padding", "").lower() == "true"
        lines = self._range(prefix, padded)
        if mode == "lowercase":
            lines = [line.lower() for line in lines]
        body = "\r\n".join(lines).encode()
        if mode == "sized":
            assert len(body) <= self.size, "a size too small for the range"
            body += b"\r\n" * ((self.size - len(body)) // 2) + b" " * ((self.size - len(body)) % 2)
        self._send(handler, 200, body)
