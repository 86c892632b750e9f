"""What every challenge service is: one verify request, a form field, a widget.

A service (Cloudflare Turnstile, hCaptcha, reCAPTCHA, or a project's own) is a
:class:`Challenge` subclass. Its widget runs in the visitor's browser and puts a
token in a hidden field of the form (:attr:`Challenge.field`); the server posts
that token with the secret key to the service's verify endpoint
(:attr:`Challenge.verify_url`) and gets back ``{"success": true|false, ...}``.
:meth:`Challenge.verify` is that request, and says ``True`` only for a clear
yes: a refusal, an error code, an answer that is not JSON, a network failure or
a timeout are all a no (the request is refused, never let through).

Like a provider, a service is configuration: it knows nothing of requests or
flows. :mod:`webauth.challenges.gate` decides when one is asked for.

The secret key is never logged and never in ``repr()``; the token neither (it
is single-use, but it is the visitor's).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar

import requests
import urllib3
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..errors import log_safe
from ..logger import get_logger

__all__ = ["DEFAULT_TIMEOUT", "MAX_ANSWER_BYTES", "Challenge", "token_problem"]

_log = get_logger("challenges")

#: Seconds to wait for a verify endpoint, to connect and then for each read:
#: a sign-in waits for the answer, so a slow service must not hold it long.
DEFAULT_TIMEOUT = 5.0

#: The most bytes of a verify endpoint's answer that are read (theirs are < 1 KiB).
MAX_ANSWER_BYTES = 64 * 1024

#: How many of a refusal's error codes a log line names.
_CODES_LOGGED = 5


def token_problem(token: object, max_length: int) -> str | None:
    """What is wrong with *token* as a widget's answer, or ``None``.

    A token is a non-empty string of at most *max_length* printable ASCII
    characters without spaces (each service's tokens are base64url-like). Any
    other value is refused before a request is made, so a client cannot make
    the server send it something arbitrary.
    """
    if not isinstance(token, str):
        return "not a string"
    if not token:
        return "empty"
    if len(token) > max_length:
        return f"longer than {max_length} characters"
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        return "not printable ASCII without spaces"
    return None


class Challenge:
    """A challenge service: its widget, its form field, its verify request.

    Subclasses set the class attributes; most need nothing else.
    ``WEBAUTH["challenge"]["service"]`` may name a subclass of a project's own
    by its dotted path: it is built with the same keyword arguments.

    ``site_key``: the public key the widget is rendered with. ``secret_key``:
    the key the verify request is made with (never logged). ``verify_url``:
    another verify endpoint (tests point it at a local fake; ``None``: the
    service's own). ``timeout``: seconds to wait for it. ``hostnames``: when
    given, the hostname the service says the widget was solved on must be one
    of them. ``http_client``: ``WEBAUTH["http_client"]``, a factory of
    ``requests.Session`` (proxies, CA bundles), or ``None`` for a plain one.
    """

    #: The name the configuration and the JSON answers call it by.
    name: ClassVar[str] = ""
    #: The form field the widget posts its token in.
    field: ClassVar[str] = ""
    #: The service's verify endpoint.
    default_verify_url: ClassVar[str] = ""
    #: The widget's script, loaded once by the page.
    script_url: ClassVar[str] = ""
    #: The CSS class of the element the script turns into a widget.
    widget_class: ClassVar[str] = ""
    #: The ``data-theme`` values the widget knows (the page's scheme, when it is one).
    widget_themes: ClassVar[frozenset[str]] = frozenset({"light", "dark"})
    #: The longest token the service issues: anything longer is refused unsent.
    max_token_length: ClassVar[int] = 8192

    def __init__(
        self,
        *,
        site_key: str,
        secret_key: str,
        verify_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        hostnames: Collection[str] = (),
        http_client: Callable[[], object] | None = None,
    ) -> None:
        self.site_key = site_key
        self.secret_key = secret_key
        self.verify_url = verify_url or self.default_verify_url
        self.timeout = timeout
        self.hostnames = frozenset(hostnames)
        self.http_client = http_client

    def __repr__(self) -> str:
        # Never the secret key: a repr ends up in logs and error pages.
        return f"{type(self).__name__}(site_key={self.site_key!r}, verify_url={self.verify_url!r})"

    # -- the verify request -----------------------------------------------------------

    def verify(self, token: str, remote_ip: str | None) -> bool:
        """Whether the service accepts *token*, solved by the visitor at *remote_ip*.

        One POST to :attr:`verify_url` (form-encoded, as every service takes it).
        ``True`` only for a JSON object whose ``success`` is ``true`` (and whose
        ``hostname`` is one of :attr:`hostnames`, when those are given); every
        other outcome is logged on the ``webauth.challenges`` logger, without
        the token or the secret, and is ``False``.
        """
        problem = token_problem(token, self.max_token_length)
        if problem is not None:
            _log.warning("webauth: a %s token was refused unsent: %s", self.name, problem)
            return False
        answer = self._ask(self.verify_params(token, remote_ip))
        return answer is not None and self.accepts(answer)

    def verify_params(self, token: str, remote_ip: str | None) -> dict[str, str]:
        """The verify request's form fields: ``secret``, ``response``, ``remoteip``."""
        params = {"secret": self.secret_key, "response": token}
        if remote_ip:
            params["remoteip"] = remote_ip
        return params

    def accepts(self, answer: Mapping[str, Any]) -> bool:
        """Whether the verify endpoint's JSON object *answer* is a yes."""
        if answer.get("success") is not True:
            codes = answer.get("error-codes")
            shown = (
                ", ".join(log_safe(c, 64) for c in codes[:_CODES_LOGGED] if isinstance(c, str))
                if isinstance(codes, list)
                else ""
            )
            _log.warning(
                "webauth: %s refused the challenge token (%s)", self.name, shown or "no error code"
            )
            return False
        if self.hostnames:
            hostname = answer.get("hostname")
            if not isinstance(hostname, str) or hostname.lower() not in self.hostnames:
                _log.warning(
                    "webauth: a %s token was solved on %s, not on one of the configured hostnames",
                    self.name,
                    log_safe(hostname, 255),
                )
                return False
        return True

    def _session(self) -> requests.Session:
        factory = self.http_client
        session = factory() if factory is not None else requests.Session()
        if not isinstance(session, requests.Session):
            raise TypeError("WEBAUTH['http_client'] must return a requests.Session")
        if str(session.headers.get("User-Agent", "")).startswith("python-requests"):
            session.headers["User-Agent"] = "webauth"  # requests' own; a project's stays
        return session

    def _ask(self, params: Mapping[str, str]) -> Mapping[str, Any] | None:
        """POST *params*; the answer's JSON object, or ``None`` (logged) when there is none."""
        try:
            with (
                self._session() as session,
                session.post(
                    self.verify_url,
                    data=dict(params),
                    timeout=self.timeout,
                    allow_redirects=False,
                    stream=True,
                ) as response,
            ):
                body = response.raw.read(MAX_ANSWER_BYTES + 1, decode_content=True)
                status = response.status_code
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            # The exception's text names the endpoint, never the body (the secret).
            _log.error(
                "webauth: the %s verify endpoint could not be reached (%s: %s)",
                self.name,
                type(exc).__name__,
                log_safe(exc, 300),
            )
            return None
        except Exception:
            # A project's http_client gone wrong, say: refused (and said), never let through.
            _log.exception("webauth: the %s verify request failed", self.name)
            return None
        if status != 200:
            _log.error("webauth: the %s verify endpoint answered HTTP %s", self.name, status)
            return None
        if len(body) > MAX_ANSWER_BYTES:
            _log.error("webauth: the %s verify endpoint's answer is too long", self.name)
            return None
        try:
            answer = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            _log.error("webauth: the %s verify endpoint's answer is not JSON", self.name)
            return None
        if not isinstance(answer, dict):
            _log.error("webauth: the %s verify endpoint's answer is not a JSON object", self.name)
            return None
        return answer

    # -- the widget -------------------------------------------------------------------

    def widget(self, *, theme: str = "auto") -> SafeString:
        """The widget's element, which :attr:`script_url` renders (and fills in the field).

        *theme* is the page's colour scheme (``WEBAUTH["theme"]["color_scheme"]``):
        passed on when the widget knows it, else the widget's own default.
        """
        attrs = format_html(' data-theme="{}"', theme) if theme in self.widget_themes else ""
        return format_html(
            '<div class="{} webauth-challenge-widget" data-sitekey="{}"{}></div>',
            self.widget_class,
            self.site_key,
            attrs,
        )
