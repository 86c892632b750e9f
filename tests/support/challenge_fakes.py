"""Local fakes of the challenge services' verify endpoints (tests/test_challenge*.py).

One threaded ``http.server`` per fake, on 127.0.0.1 at a free port, that answers
``POST /siteverify`` as its service documents it: a form-encoded ``secret``,
``response`` and ``remoteip`` (hCaptcha also ``sitekey``), and a JSON answer
``{"success": ..., "error-codes": [...], "hostname": ..., "challenge_ts": ...}``:

- a token the fake issued (:meth:`FakeVerifier.issue`) passes once; again, it is
  the service's "duplicate" code (Turnstile and reCAPTCHA ``timeout-or-duplicate``,
  hCaptcha ``already-seen-response``); one issued ``expired=True`` the service's
  "expired" code; any other ``invalid-input-response``;
- a wrong secret is ``invalid-input-secret``, a missing one ``missing-input-secret``,
  a missing token ``missing-input-response``; for hCaptcha a site key that is not
  the fake's ``sitekey-secret-mismatch``;
- :attr:`FakeVerifier.mode` makes it misbehave: ``"slow"`` (answers after
  :attr:`FakeVerifier.delay` seconds), ``"garbage"`` (a body that is not JSON),
  ``"list"`` (JSON that is not an object), ``"http500"``, ``"internal-error"``
  (Turnstile's ``internal-error`` code), ``"huge"`` (a megabyte of JSON),
  ``"sized"`` (a yes of exactly :attr:`FakeVerifier.size` bytes), ``"gzip"`` (the
  answer gzip-encoded, as a CDN may send it), ``"redirect"`` (a ``302`` to a page
  that says yes to anyone: a client that follows it is fooled).

Every request it got is kept (:attr:`FakeVerifier.requests`: the form fields and
the headers), so a test can say what was sent, and that nothing was.
"""

from __future__ import annotations

import gzip
import json
import secrets
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs

from .local_server import LocalServer, QuietHandler

#: Per service: the error codes of a used token and of an expired one, and a token's look.
CODES = {
    "turnstile": {"duplicate": "timeout-or-duplicate", "expired": "timeout-or-duplicate"},
    "hcaptcha": {"duplicate": "already-seen-response", "expired": "expired-input-response"},
    "recaptcha": {"duplicate": "timeout-or-duplicate", "expired": "timeout-or-duplicate"},
}
_PREFIX = {"turnstile": "0.", "hcaptcha": "P1_", "recaptcha": "03A"}


class FakeVerifier(LocalServer):
    """A fake of *service*'s verify endpoint that knows *secret* (and *site_key*)."""

    def __init__(self, service: str, secret: str, *, site_key: str = "site-key") -> None:
        self.service = service
        self.secret = secret
        self.site_key = site_key
        self.mode = "normal"
        self.delay = 2.0
        self.size = 0
        self.requests: list[dict[str, Any]] = []
        self._tokens: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    # -- the server -----------------------------------------------------------------

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace")
                if fake.mode == "redirect":
                    fake.requests.append({"path": self.path, "headers": {}, "form": {}})
                    self.send_response(302)
                    self.send_header("Location", "/ok")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status, payload = fake._answer(self.path, dict(self.headers), body)
                self._send(status, payload)

            def do_GET(self) -> None:
                # Where "redirect" sends a client: a yes for anyone who follows.
                self._send(200, {"success": True, "hostname": "testserver"})

            def _send(self, status: int, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if fake.mode == "gzip":
                    data = gzip.compress(data)
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    @property
    def url(self) -> str:
        return self.origin + "/siteverify"

    # -- tokens ---------------------------------------------------------------------

    def issue(self, *, hostname: str = "testserver", expired: bool = False) -> str:
        """A token the widget would have put in the form: it passes once."""
        token = _PREFIX[self.service] + secrets.token_urlsafe(48)
        with self._lock:
            self._tokens[token] = {"hostname": hostname, "expired": expired, "used": False}
        return token

    def sent(self) -> list[dict[str, str]]:
        """The form fields of every verify request so far."""
        return [r["form"] for r in self.requests]

    # -- answering ------------------------------------------------------------------

    def _answer(self, path: str, headers: dict[str, str], body: str) -> tuple[int, Any]:
        form = {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}
        self.requests.append({"path": path, "headers": headers, "form": form})
        mode = self.mode
        if mode == "slow":
            time.sleep(self.delay)
        elif mode == "garbage":
            return 200, b"<html>Service unavailable</html>"
        elif mode == "list":
            return 200, [True]
        elif mode == "http500":
            return 500, {"success": False}
        elif mode == "huge":
            return 200, {"success": True, "padding": "x" * (1024 * 1024)}
        elif mode == "sized":
            frame = len(json.dumps({"success": True, "padding": ""}).encode())
            return 200, {"success": True, "padding": "x" * (self.size - frame)}
        elif mode == "internal-error":
            return 200, {"success": False, "error-codes": ["internal-error"]}
        if path != "/siteverify":
            return 404, {"success": False}
        if not headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            return 200, self._no("bad-request")
        secret = form.get("secret")
        if not secret:
            return 200, self._no("missing-input-secret")
        if secret != self.secret:
            return 200, self._no("invalid-input-secret")
        token = form.get("response")
        if not token:
            return 200, self._no("missing-input-response")
        if self.service == "hcaptcha" and form.get("sitekey", self.site_key) != self.site_key:
            return 200, self._no("sitekey-secret-mismatch")
        with self._lock:
            issued = self._tokens.get(token)
            if issued is None:
                return 200, self._no("invalid-input-response")
            if issued["expired"]:
                return 200, self._no(CODES[self.service]["expired"])
            if issued["used"]:
                return 200, self._no(CODES[self.service]["duplicate"])
            issued["used"] = True
        answer: dict[str, Any] = {
            "success": True,
            "challenge_ts": datetime.now(UTC).isoformat(timespec="seconds"),
            "hostname": issued["hostname"],
        }
        if self.service == "turnstile":
            answer.update({"error-codes": [], "action": "", "cdata": ""})
        elif self.service == "hcaptcha":
            answer["credit"] = False
        return 200, answer

    def _no(self, code: str) -> dict[str, Any]:
        return {"success": False, "error-codes": [code]}
