"""A token endpoint that rotates refresh tokens and refuses a reused one.

As providers that detect refresh-token reuse do (OAuth 2.0 Security BCP, 4.14.2):
each refresh token works once; the endpoint answers it with a new access token
and a new refresh token, and answers a second use with ``invalid_grant``. It
counts every request, so a test can prove how many times a client called it.
Served over real HTTP from a thread of the test process.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs

from .local_server import LocalServer, QuietHandler


class RotatingTokenEndpoint(LocalServer):
    """``with RotatingTokenEndpoint("rt-0") as endpoint:`` serves at ``endpoint.url``."""

    def __init__(self, refresh_token: str, *, delay: float = 0.5, error_description: str = ""):
        self.current = refresh_token
        self.delay = delay  # the provider's think time: concurrent callers overlap
        self.error_description = error_description
        self.calls: list[str] = []  # the refresh token of each request, in order
        self.issued: list[str] = []  # the access tokens handed out
        self._lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                form = {k: v[-1] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                status, body = endpoint.answer(form)
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    @property
    def url(self) -> str:
        return self.origin + "/token"

    def answer(self, form: dict[str, str]) -> tuple[int, dict[str, object]]:
        token = form.get("refresh_token", "")
        with self._lock:  # check and rotate at once, as a provider's database would
            self.calls.append(token)
            valid = form.get("grant_type") == "refresh_token" and token == self.current
            if valid:
                number = len(self.issued) + 1
                self.current = f"rt-{number}"
                self.issued.append(f"at-{number}")
        time.sleep(self.delay)
        if not valid:
            body: dict[str, object] = {"error": "invalid_grant"}
            if self.error_description:
                body["error_description"] = self.error_description
            return 400, body
        return 200, {
            "access_token": self.issued[number - 1],
            "refresh_token": f"rt-{number}",
            "token_type": "Bearer",
            "expires_in": 3600,
        }


def rotating_provider(token_endpoint: str):
    """The OAuth provider ``rotating`` whose tokens come from *token_endpoint*."""
    from webauth.providers.oauth import OAuth2

    return OAuth2(
        id="rotating",
        client_id="client",
        client_secret="secret",
        authorization_endpoint="https://provider.example/authorize",
        token_endpoint=token_endpoint,
        userinfo_endpoint="https://provider.example/userinfo",
    )
