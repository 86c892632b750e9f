"""Access tokens for other services: ``GET /auth/token``, ``POST /auth/app/access-token``,
and what verifiers fetch: ``GET /auth/.well-known/jwks.json`` and
``GET /auth/.well-known/openid-configuration`` (docs/tokens.md).

All of them exist only with ``WEBAUTH["tokens"]`` configured (``404
{"error": "UnknownAction"}`` otherwise).

* ``GET /auth/token?audience=<service>``: a signed access token for the
  request's session (its cookie, or with ``bearer`` on its ``Authorization``
  header), ``{"access_token", "token_type": "Bearer", "expires_in",
  "audience"}`` as an OAuth 2.0 token response names them. *audience* may be
  left out when ``tokens.audiences`` has one entry. A ``GET`` changes nothing,
  so it needs no CSRF token; another site's page cannot read the answer (no
  CORS headers are sent). ``POST /auth/app/access-token`` is the same for
  bearer clients, the audience in the JSON body.
* The JWKS: the public keys, ``Cache-Control: public, max-age=<jwks_max_age>``.
* ``GET /auth/token/ended?since=<seconds>``: the revocation feed, the ids of
  sessions whose tokens must be dropped (:mod:`webauth.tokens.ended`).
* The metadata document (OpenID Connect Discovery's name and members, which
  verifiers find from the issuer): ``issuer``, ``jwks_uri`` and the algorithms.

Errors: ``401 {"error": "SessionRequired"}`` without a live session (with
``WWW-Authenticate: Bearer`` for a bearer request), ``400 {"error":
"InvalidAudience"}`` for an audience not configured, ``429`` past the
``access_token`` limit, ``405`` for another method, ``500 {"error": <type>}``
when the server fails (logged, never the token).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent

from .. import ratelimit
from ..bearer import session_required
from ..errors import AuthError
from ..events import emit
from ..responses import encoded_json_response, json_bytes, json_response
from ..tokens.ended import ended_since, note_minted, read_cursor
from ..tokens.keys import public_jwks
from ..tokens.mint import mint
from ..utils import own_transactions
from .preamble import Unconfigured, load_config, open_state

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

    from ..conf import Config
    from ..state import AuthState

__all__ = [
    "access_token",
    "app_access_token",
    "ended_view",
    "issuer_of",
    "jwks_view",
    "metadata_view",
    "token_view",
]

#: The longest audience read from a request (longer ones are no configured audience).
_MAX_AUDIENCE = 200


def _error(error_type: str, status: int, message: str | None = None) -> HttpResponse:
    body = {"error": error_type} if message is None else {"error": error_type, "message": message}
    return json_response(body, status=status, no_cache=True)


def issuer_of(state: AuthState) -> str:
    """The tokens' ``iss``: ``tokens.issuer``, or the site's origin and ``base_path``."""
    assert state.config.tokens is not None
    return state.config.tokens.issuer or state.base_url


def _audience(config: Config, asked: object) -> str | None:
    """The configured audience *asked* names (the only one when none is asked), or ``None``."""
    assert config.tokens is not None
    audiences = config.tokens.audiences
    if asked in (None, "") and len(audiences) == 1:
        return audiences[0]
    if not isinstance(asked, str) or len(asked) > _MAX_AUDIENCE:
        return None
    # Compared as given: "API" is not "api", and a configured URL is matched exactly.
    return asked if asked in audiences else None


def access_token(state: AuthState, asked: object) -> HttpResponse:
    """A signed access token for the request's session and the audience *asked*."""
    config = state.config
    decision = ratelimit.hit(state.request, "access_token", config=config)
    if not decision:
        return ratelimit.limited_response(decision)
    audience = _audience(config, asked)
    if audience is None:
        return _error(
            "InvalidAudience", 400, "audience must be one of the configured tokens.audiences"
        )
    result = state.session_result
    raw = state.session_token
    if result.session is None or result.user_id is None or raw is None:
        return session_required() if state.bearer else _error("SessionRequired", 401)
    salt = state.cookies["session_token"].name
    facts = state.sessions.facts(config, raw, salt)
    if facts is None:  # ended between the read and now
        return session_required() if state.bearer else _error("SessionRequired", 401)
    # Noted before it is signed, so that its session's end reaches the feed; a
    # session that has ended (signed out, or "sign out everywhere" under jwt,
    # whose cookie lives on) gets no token.
    expires_at = time.time() + config.tokens.max_age + 1 if config.tokens else 0
    if not note_minted(config, facts.sid, result.user_id, expires_at):
        return session_required() if state.bearer else _error("SessionRequired", 401)
    user = state.session_user if config.callbacks.token is not None else None
    minted = mint(
        config,
        issuer=issuer_of(state),
        user_id=result.user_id,
        audience=audience,
        facts=facts,
        user=user,
        session=result.session,
    )
    emit(config, "access_token", request=state.request, claims=minted.claims)
    return json_response(
        {
            "access_token": minted.token,
            "token_type": "Bearer",
            "expires_in": config.tokens.max_age if config.tokens else 0,
            "audience": audience,
        },
        no_cache=True,
    )


def _serve(
    request: HttpRequest, methods: tuple[str, ...]
) -> tuple[Config | None, HttpResponse | None]:
    """The configuration, or the answer for a request that cannot go on."""
    try:
        config = load_config()
    except Unconfigured:
        return None, _error("Configuration", 500)
    if config.tokens is None:
        return None, _error("UnknownAction", 404)
    if request.method not in methods:
        response = _error("UnknownAction", 405)
        response["Allow"] = ", ".join(methods)
        return None, response
    return config, None


def token_view(request: HttpRequest) -> HttpResponse:
    """``GET /auth/token``: an access token for the cookie's (or bearer token's) session."""
    config, refused = _serve(request, ("GET",))
    if refused is not None or config is None:
        return refused or _error("Configuration", 500)
    try:
        state = open_state(request, config, "request")
    except Unconfigured:
        return _error("Configuration", 500)
    try:
        return access_token(state, state.query.get("audience"))
    except Exception as exc:  # a failing adapter or callback: logged, never a token
        error = exc if isinstance(exc, AuthError) else AuthError(cause={"err": exc})
        config.logger.error(error)
        return _error(error.type, 500)


def app_access_token(state: AuthState) -> HttpResponse:
    """``POST /auth/app/access-token``: as ``GET /auth/token``, for a bearer client."""
    if state.config.tokens is None:
        return _error("UnknownAction", 404)
    try:
        body = state.body
    except (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent):
        return _error("InvalidRequest", 400, "the body is too large or has too many fields")
    return access_token(state, body.get("audience"))


# One key set's JWKS, encoded once: (the options it was made for, the bytes).
_jwks_cache: list[tuple[object, bytes]] = []


def _jwks_bytes(config: Config) -> bytes:
    options = config.tokens
    assert options is not None
    if _jwks_cache and _jwks_cache[0][0] is options:
        return _jwks_cache[0][1]
    content = json_bytes(public_jwks(options.keys))
    _jwks_cache[:] = [(options, content)]
    return content


def _public(content: bytes, config: Config) -> HttpResponse:
    assert config.tokens is not None
    response = encoded_json_response(content)
    # Verifiers keep the set this long; an unknown kid makes them fetch it sooner.
    response["Cache-Control"] = f"public, max-age={config.tokens.jwks_max_age}"
    response["Access-Control-Allow-Origin"] = "*"  # public keys: any verifier may read them
    return response


def jwks_view(request: HttpRequest) -> HttpResponse:
    """``GET /.well-known/jwks.json``: the public keys that verify webauth's access tokens."""
    config, refused = _serve(request, ("GET", "HEAD"))
    if refused is not None or config is None:
        return refused or _error("Configuration", 500)
    return _public(_jwks_bytes(config), config)


#: The longest ``since`` read (POSIX seconds have 10 digits until 2286).
_MAX_SINCE_DIGITS = 12


def ended_view(request: HttpRequest) -> HttpResponse:
    """``GET /auth/token/ended?since=<POSIX seconds>``: the revocation feed.

    The ids of sessions that access tokens were minted for and that ended at or
    after *since* (default, and at the earliest: as far back as a token could
    still be alive), ``{"ended": [{"sid", "at"}], "until"}``, oldest first; the
    next poll passes ``since=<until>``. A full answer (1,000 entries) also has
    ``next``: ask again with ``after=<next>`` for the rest before polling on.
    ``404`` while ``tokens.feed`` is off.
    """
    config, refused = _serve(request, ("GET", "HEAD"))
    if refused is not None or config is None:
        return refused or _error("Configuration", 500)
    assert config.tokens is not None
    if not config.tokens.feed:
        return _error("UnknownAction", 404)
    decision = ratelimit.hit(request, "token_feed", config=config)
    if not decision:
        return ratelimit.limited_response(decision)
    raw, cursor = request.GET.get("since"), request.GET.get("after")
    since: int | None = None
    after = None
    if cursor is not None:
        after = read_cursor(cursor)
        if after is None:
            return _error("InvalidRequest", 400, "after must be a previous answer's next")
    elif raw is not None:
        if not (raw.isascii() and raw.isdigit() and len(raw) <= _MAX_SINCE_DIGITS):
            return _error("InvalidRequest", 400, "since must be a time in POSIX seconds")
        since = int(raw)
    try:
        page = ended_since(config, since, after)
    except Exception as exc:  # a failing adapter: logged, never a partial list
        error = exc if isinstance(exc, AuthError) else AuthError(cause={"err": exc})
        config.logger.error(error)
        return _error(error.type, 500)
    body: dict[str, object] = {
        "ended": [{"sid": sid, "at": at} for sid, at in page.entries],
        "until": page.until,
    }
    if page.next is not None:
        body["next"] = page.next
    # Each poll is a new question; any verifier may read it (the ids say nothing
    # of who the users are).
    response = json_response(body, no_cache=True)
    response["Access-Control-Allow-Origin"] = "*"
    return response


def metadata_view(request: HttpRequest) -> HttpResponse:
    """``GET /auth/.well-known/openid-configuration``: the issuer and where its keys are."""
    config, refused = _serve(request, ("GET", "HEAD"))
    if refused is not None or config is None:
        return refused or _error("Configuration", 500)
    try:
        state = open_state(request, config, "request")
    except Unconfigured:
        return _error("Configuration", 500)
    assert config.tokens is not None
    document = {
        "issuer": issuer_of(state),
        "jwks_uri": f"{state.base_url}/.well-known/jwks.json",
        # OpenID Connect Discovery's name for the algorithms its keys sign with (some
        # verifiers, such as go-oidc, read it to choose theirs).
        "id_token_signing_alg_values_supported": sorted({k.alg for k in config.tokens.keys}),
    }
    return _public(json_bytes(document), config)


for _view in (token_view, jwks_view, metadata_view, ended_view):
    # No cookie-authenticated change of state: Django's CSRF check has nothing to guard.
    _view.csrf_exempt = True  # type: ignore[attr-defined]
    # They answer 401 themselves (or are public); LoginRequiredMiddleware must not redirect.
    _view.login_required = False  # type: ignore[attr-defined]
    # Never inside ATOMIC_REQUESTS' transaction: webauth's own are outermost.
    own_transactions(_view)
