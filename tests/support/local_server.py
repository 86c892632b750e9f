"""The local HTTP server that the fakes of outside services run on.

The fakes in challenge_fakes, pwned and token_endpoint each run one: a threaded
``http.server`` on 127.0.0.1 at a free port, served from a daemon thread of the
test process while inside ``with``. A fake subclasses :class:`LocalServer` and
gives its request handler class (:meth:`handler`, usually a :class:`QuietHandler`
that answers from the fake's state).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing."""

    def log_message(self, *args: object) -> None:
        pass  # quiet


class LocalServer:
    """Serves :meth:`handler`'s class at :attr:`origin` while inside ``with``."""

    _server: ThreadingHTTPServer | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>`` (still known once the server is closed)."""
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"
