"""The email flow: one message with a link and a code, that mail scanners cannot use or burn.

``POST /auth/signin/<id>`` (:func:`start`) normalises the address, asks the
``sign_in`` callback (``email={"verification_request": True}``), stores one
*grant* (the hashes of a link token and of a short code, through the adapter's
``replace_verification_token``, which voids the address's earlier grants), mails
both, sets the **pending cookie** and sends the browser to ``verify-request``.
It does the same work and gives the same answer whether or not the address has
an account.

``/auth/callback/<id>`` (:func:`callback`) redeems a grant. Auth.js signs in at
the first ``GET`` of the link, and so does any mail scanner that opens links
before the person does (Outlook Safe Links, Proofpoint, Gmail's checks): the
scanner uses up the link, or gets the session. Here:

* ``GET`` (and ``HEAD``) of the link change nothing and look nothing up. In the
  browser that asked (it holds the pending cookie, for this provider, this
  address and this link) the link shows a page with one button that POSTs the
  token; in any other browser, a page that says where to finish. A scanner has
  no pending cookie, so even one that runs the page's JavaScript and clicks only
  ever sees the second page.
* The pending cookie remembers the links this browser asked for (a fingerprint
  of each, :func:`link_fingerprint`) for a week after their grant ends: after a
  sign-in it keeps only them. So a link opened again where it was asked for,
  once used, expired or voided by a newer request, is what it is, no longer
  valid (``Verification``, the error page), and never "finish where you
  started"; the cookie alone says so, still without a look-up.
* ``POST`` redeems: the token from the confirmation page, or the code typed on
  the ``verify-request`` page. Both need the pending cookie, checked before
  anything is consumed; the code's address comes from the cookie, never from
  the form, and so does the grant's *binding*, without which neither the token
  nor the code matches what is stored (:func:`grant_hash`). So a session only
  ever reaches the browser whose request made the grant (not even another
  browser that asked for the same address), and a blind POST burns nothing.
* ``confirm_link=False`` restores Auth.js's one-click ``GET`` for projects that
  want it (a system check, ``webauth.I002``, names the risk).

A wrong code counts against the grant in the adapter (``use_verification_code``:
void after ``code_max_attempts``, across resends) and against the
``code_failed`` rate limit (given back on success). Redemption is single-use in
the adapter (one conditional DELETE decides), then :func:`~webauth.flows.signin.finish`
signs in as every flow does; :class:`EmailAttempt` sets ``email_verified`` at
the first sign-in and creates the user if new, with an ``email`` account
(Auth.js stores none: docs/differences-from-authjs.md).

Nothing here logs a token, a code, a hash or a link.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlencode

from django.http import HttpResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from .. import challenges, ratelimit
from .. import cookies as ck
from .. import jwt as jose
from ..clients import returns_redirect
from ..errors import AuthError, EmailInUse, EmailSignInError, RateLimited, Verification
from ..events import emit
from ..providers.email import Email
from ..responses import private_no_store, redirect
from ..types import AdapterAccount, AdapterUser, VerificationToken
from ..typing_aliases import SignalSender
from ..utils import aware, call
from .accounts import create_and_link, prove_address
from .signin import Attempt, SignedIn, finish, sign_in_redirect

if TYPE_CHECKING:
    from django.http import HttpResponseBase

    from ..adapters.storage import Storage
    from ..conf import Config
    from ..providers.base import Provider
    from ..state import AuthState

__all__ = [
    "BINDING_LENGTH",
    "EMAIL_METHODS",
    "FINGERPRINT_LENGTH",
    "LINKS_KEPT",
    "REMEMBER_LINKS",
    "EmailAttempt",
    "InvalidEmail",
    "Pending",
    "Sent",
    "attempt_for",
    "callback",
    "grant_hash",
    "link_fingerprint",
    "read_pending",
    "redeem_code",
    "send",
    "start",
    "verify_request_context",
    "wrong_code_message",
]

#: The adapter methods email sign-in calls (its entry's ``adapter_methods`` in
#: :data:`webauth.flows.FLOWS`).
EMAIL_METHODS: tuple[str, ...] = (
    "replace_verification_token",
    "use_verification_token",
    "use_verification_code",
    "get_user_by_email",
    "create_user",
    "link_account",
    "update_user",
)

#: The pending cookie's key in ``AuthState.cookies`` (``authjs.email-pending``).
PENDING = "email_pending"


class InvalidEmail(EmailSignInError):
    """The address typed into the sign-in form is not one webauth can send to.

    Its type stays ``EmailSignInError``; ``code`` is the ``code=`` of the sign-in
    page's URL, ``field_message`` the field error shown on the form, ``value``
    what was typed. The log line names neither.
    """

    code = "invalid_email"
    user_caused = True  # what was typed: a warning, unlike a delivery failure

    def __init__(self, field_message: str, *, value: str) -> None:
        super().__init__("The email address is not valid")
        self.field_message = field_message
        self.value = value


# -- the pending cookie ------------------------------------------------------------------

#: Seconds a browser remembers the links it asked for after their grant ended
#: (used here, expired, or voided by a newer request), so that opening one of
#: them again shows "no longer valid", not "finish where you started".
REMEMBER_LINKS = 7 * 86400

#: How many of its latest links a browser remembers.
LINKS_KEPT = 5

#: The characters of a link's fingerprint (:func:`link_fingerprint`): 128 bits.
FINGERPRINT_LENGTH = 22


def link_fingerprint(token: str) -> str:
    """What the pending cookie keeps of a link: enough to know it again, nothing to use.

    A truncated SHA-256 of the link's token (128 bits, base64url), under a
    label of its own, so it is none of the stored hashes (:func:`grant_hash`).
    It only ever sits in the encrypted pending cookie; with the grant's
    binding gone from that cookie, it redeems nothing.
    """
    digest = hashlib.sha256(b"webauth email link\0" + token.encode("utf-8", "surrogatepass"))
    return base64.urlsafe_b64encode(digest.digest()[:16]).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True)
class Pending:
    """What the pending cookie says: this browser asked *provider* to mail *identifier*.

    ``binding`` is the grant's binding (:func:`grant_hash`): without it the
    grant's code and link cannot be redeemed. ``attempts`` counts the wrong
    codes this browser typed (for the page's "attempts left"; the adapter's
    count is the one that voids the grant). ``expires``: the grant's expiry
    (seconds since the epoch; ``None`` in a cookie made before it was kept).
    ``links``: the fingerprints (:func:`link_fingerprint`) of the links this
    browser asked for, this grant's first.
    """

    provider: str
    identifier: str
    callback_url: str
    binding: str
    attempts: int
    expires: int | None = None
    links: tuple[str, ...] = ()


def _payload(state: AuthState, provider: Provider | None) -> dict[str, Any] | None:
    """The pending cookie's claims: ``None`` when absent, expired, tampered, another provider's."""
    spec = state.cookies[PENDING]
    raw = state.request_cookies.get(spec.name)
    if not raw:
        return None
    payload = jose.decode(token=ck.decode_value(raw), secret=state.config.secret, salt=spec.name)
    if payload is None or not isinstance(payload.get("provider"), str):
        return None
    if provider is not None and payload["provider"] != provider.id:
        return None
    return payload


def _links_of(payload: Mapping[str, Any]) -> tuple[str, ...]:
    links = payload.get("links")
    if not isinstance(links, list):
        return ()
    return tuple(
        link
        for link in links[:LINKS_KEPT]
        if isinstance(link, str) and len(link) == FINGERPRINT_LENGTH
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _pending_of(payload: Mapping[str, Any]) -> Pending | None:
    """The sign-in the cookie holds, if its grant can still be redeemed here.

    ``None`` once it was used here (the cookie keeps only its links) or its
    expiry has passed.
    """
    provider_id, identifier = payload.get("provider"), payload.get("identifier")
    callback_url, binding = payload.get("callbackUrl"), payload.get("binding")
    if not isinstance(provider_id, str) or not isinstance(identifier, str) or not identifier:
        return None
    if not isinstance(binding, str) or not binding:
        return None  # a cookie of a grant it cannot redeem
    expires = _count(payload.get("expires"))
    if "expires" in payload and expires is None:
        return None  # a cookie that has one only ever holds a number
    if expires is not None and expires <= int(time.time()):
        return None  # expired at its expiry instant, as the adapters' checks have it
    attempts = _count(payload.get("attempts", 0))
    return Pending(
        provider=provider_id,
        identifier=identifier,
        callback_url=callback_url if isinstance(callback_url, str) else "",
        binding=binding,
        # Only shown to the person ("attempts left"): kept within sane bounds.
        attempts=min(max(attempts, 0), 1000) if attempts is not None else 0,
        expires=expires,
        links=_links_of(payload),
    )


def read_pending(state: AuthState, provider: Provider | None = None) -> Pending | None:
    """The sign-in this browser is waiting to finish, or ``None``.

    ``None`` when the cookie is absent, expired, tampered or another
    provider's (with *provider*, a cookie made for another provider counts as
    none), and when its grant was used here or has expired.
    """
    payload = _payload(state, provider)
    return _pending_of(payload) if payload is not None else None


def _cookie_spec(state: AuthState, lifetime: int) -> ck.CookieSpec:
    spec = state.cookies[PENDING]
    if spec.max_age is None:  # unless the project set one in WEBAUTH["cookies"]
        spec = replace(spec, max_age=lifetime)
    return spec


def _write_pending(
    state: AuthState, response: HttpResponseBase, provider: Email, pending: Pending
) -> None:
    # The cookie outlives its grant by REMEMBER_LINKS: long enough to tell a
    # link opened again after it expired from a link of another browser.
    left = provider.max_age if pending.expires is None else pending.expires - int(time.time())
    lifetime = max(left, 0) + REMEMBER_LINKS
    spec = _cookie_spec(state, lifetime)
    claims: dict[str, object] = {
        "provider": pending.provider,
        "identifier": pending.identifier,
        "callbackUrl": pending.callback_url,
        "binding": pending.binding,
        "attempts": pending.attempts,
        "links": list(pending.links),
    }
    if pending.expires is not None:
        claims["expires"] = pending.expires
    value = jose.encode(
        token=claims, secret=list(state.config.secret), salt=spec.name, max_age=lifetime
    )
    ck.set_cookie(response, spec, value)


def _write_used(state: AuthState, response: HttpResponseBase, provider: Email) -> None:
    """After a sign-in: the cookie forgets the grant and keeps only its links.

    No address, no binding, no callback URL: what is left tells this browser's
    links apart from others' (:func:`_asked_for`), for :data:`REMEMBER_LINKS`.
    """
    spec = state.cookies[PENDING]
    if spec.name not in state.request_cookies:
        return
    payload = _payload(state, provider)
    links = _links_of(payload) if payload is not None else ()
    if not links:
        ck.delete_cookie(response, spec)  # nothing worth remembering
        return
    spec = _cookie_spec(state, REMEMBER_LINKS)
    value = jose.encode(
        token={"provider": provider.id, "links": list(links), "used": True},
        secret=list(state.config.secret),
        salt=spec.name,
        max_age=REMEMBER_LINKS,
    )
    ck.set_cookie(response, spec, value)


def _is_over(payload: Mapping[str, Any]) -> bool:
    """Whether the cookie's grant was used here, or its expiry has passed."""
    if payload.get("used") is True:
        return True
    expires = _count(payload.get("expires"))
    return expires is not None and expires <= int(time.time())


def _asked_for(state: AuthState, provider: Email, token: str) -> bool:
    """Whether this browser asked for the link whose token is *token*.

    Read from the pending cookie alone (its grant live, used or expired):
    nothing is looked up, and a browser without the cookie, a mail scanner's,
    learns nothing. Every kept link is compared, in constant time.
    """
    payload = _payload(state, provider)
    if payload is None:
        return False
    return _among(link_fingerprint(token), _links_of(payload))


def _among(fingerprint: str, links: Sequence[str]) -> bool:
    found = False
    for link in links:
        found |= hmac.compare_digest(fingerprint.encode(), link.encode())
    return found


def _is_this_grants(pending: Pending, token: str) -> bool:
    """Whether *token* is the link of the grant *pending* holds.

    A cookie made before links were kept (``links`` empty) cannot tell: the
    adapter decides, as before.
    """
    if not pending.links:
        return True
    return hmac.compare_digest(link_fingerprint(token).encode(), pending.links[0].encode())


# -- shared pieces -------------------------------------------------------------------------


def _account(provider_id: str, identifier: str, user_id: str) -> dict[str, object]:
    # Auth.js's account of an email sign-in (never stored).
    return {
        "providerAccountId": identifier,
        "userId": user_id,
        "type": "email",
        "provider": provider_id,
    }


def _render(
    state: AuthState, template: str, context: Mapping[str, object], status: int
) -> HttpResponse:
    """One of the flow's own pages, themed as the built-in pages are."""
    html = render_to_string(
        template, {"theme": asdict(state.config.theme), **context}, request=state.request
    )
    response = HttpResponse(html, status=status, content_type="text/html; charset=utf-8")
    # The link's URL holds the token: no cache keeps the page, no Referer carries it
    # to a logo or stylesheet of another site.
    private_no_store(response)
    response["Referrer-Policy"] = "no-referrer"
    return response


# -- POST /auth/signin/<id> ----------------------------------------------------------------


def start(
    state: AuthState, provider: Provider, params: Mapping[str, object], callback_url: str
) -> HttpResponse:
    """Mail a link and a code for ``params["email"]``; redirect to ``verify-request``.

    Raises :class:`InvalidEmail` for an address webauth cannot use (the route
    shows the field error), ``RateLimited`` beyond ``email_send``, and
    ``EmailSignInError`` when delivery fails (the grant is voided first).
    Before all that, ``ChallengeFailed`` when the bot challenge is on and not
    passed (:func:`webauth.challenges.require`).
    """
    email = cast(Email, provider)
    if state.config.challenge is not None:
        challenges.require(state, "email", params)
    sent = send(state, email, params.get("email"), callback_url)
    if isinstance(sent, str):
        return redirect(sent)
    response = redirect(
        f"{state.base_url}/verify-request?" + urlencode({"provider": email.id, "type": "email"})
    )
    # The links this browser asked for before (for this provider) are kept behind
    # the new one: opened again, they are "no longer valid", not "elsewhere".
    earlier = _payload(state, email)
    links = (sent.link, *(_links_of(earlier) if earlier is not None else ()))[:LINKS_KEPT]
    pending = Pending(
        email.id, sent.identifier, callback_url, sent.binding, sent.attempts, sent.expires, links
    )
    _write_pending(state, response, email, pending)
    return response


@dataclass(frozen=True, slots=True)
class Sent:
    """A grant mailed to *identifier*.

    ``binding``: what the client that asked must show to redeem it
    (:func:`grant_hash`); ``attempts``: the wrong codes it inherits;
    ``link``: its link's fingerprint (:func:`link_fingerprint`); ``expires``:
    its expiry, in seconds since the epoch.
    """

    identifier: str
    binding: str
    attempts: int
    link: str = ""
    expires: int | None = None


#: Characters of a grant's binding: ``secrets.token_urlsafe(32)``, 256 bits.
BINDING_LENGTH = 43


def grant_hash(email: Email, value: str, binding: str | None, secret: Sequence[str]) -> str:
    """How a grant's link token or code is stored, and looked for when it comes back.

    With a *binding*, the hash is of the value and the binding together. The
    binding is made when the grant is: 256 random bits that only the client
    that asked holds (the browser in its encrypted pending cookie, an app in
    the answer to its request), never in the message. So a code or link read
    out of the message, by a person or a mail scanner, redeems nothing
    anywhere else: a browser's grant needs its browser, an app's its app.
    Without one (``confirm_link=False``'s one-click link, which any browser
    may open, and the account center's grants, which the session binds) it
    is Auth.js's ``sha256(value + secret)``.
    """
    return email.hash_value(value if binding is None else f"{value}\0{binding}", secret)


def send(state: AuthState, email: Email, typed: Any, callback_url: str) -> Sent | str:
    """Store a grant for the address *typed* and mail its link and code.

    The work of :func:`start` without its answer, shared with the app sign-in:
    the same limits and callback, and the same work whether or not the
    address has an account. Returns the URL the ``sign_in`` callback asked to
    go to instead, if it did. Raises as :func:`start` does.
    """
    storage = state.config.storage.require(*EMAIL_METHODS, feature="Email login")
    config = state.config
    try:
        identifier = email.normalize(typed)
    except ValueError as exc:
        raise InvalidEmail(str(exc), value=typed if isinstance(typed, str) else "") from None
    # Counted per address whether or not it has an account: the limit says nothing.
    decision = ratelimit.hit(state.request, "email_send", identifier, config=config)
    if not decision:
        raise RateLimited("Too many sign-in emails", retry_after=decision.retry_after)

    # Auth.js's order: the user (or a stand-in), then the sign_in callback.
    user = storage.get_user_by_email(identifier)
    candidate = user or AdapterUser(id=str(uuid.uuid4()), email=identifier)
    elsewhere = sign_in_redirect(
        state,
        user=candidate,
        account=_account(email.id, identifier, candidate.id),
        email={"verification_request": True},
    )
    if elsewhere is not None:
        return elsewhere

    token = email.new_token()
    code = email.new_code()
    binding = secrets.token_urlsafe(32)
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=email.max_age)
    grant = VerificationToken(
        identifier=identifier,
        # Auth.js's one-click link is opened by whichever browser: not bound.
        token=grant_hash(email, token, binding if email.confirm_link else None, config.secret),
        expires=expires,
        code=grant_hash(email, code, binding, config.secret) if code is not None else None,
    )
    # Stored before the message leaves, so that a quick click finds it; this voids
    # the address's earlier grants (their wrong-code count carries over).
    stored = storage.replace_verification_token(grant)
    url = f"{state.base_url}/callback/{email.id}?" + urlencode(
        {"callbackUrl": callback_url, "token": token, "email": identifier}
    )
    try:
        call(
            email.send_function,
            identifier=identifier,
            url=url,
            token=token,
            code=email.display_code(code) if code is not None else None,
            expires=expires,
            provider=email,
            theme=config.theme,
            request=state.request,
        )
    except Exception as exc:
        # Nobody received this grant: void it, so nothing usable is left behind.
        with suppress(AuthError):
            storage.use_verification_token(identifier, grant.token)
        raise EmailSignInError(
            f"Sending the sign-in email with provider {email.id!r} failed", cause={"err": exc}
        ) from exc

    config.logger.debug("verification email sent", {"provider": email.id})
    # The wrong codes the voided grants had carry over (the adapter says how many).
    attempts = stored.attempts if stored is not None else 0
    return Sent(identifier, binding, attempts, link_fingerprint(token), int(expires.timestamp()))


# -- /auth/callback/<id> ---------------------------------------------------------------------


def callback(
    state: AuthState, provider: Provider, params: Mapping[str, object], callback_url: str
) -> HttpResponse:
    """``GET``: the link (a page, or with ``confirm_link=False`` the sign-in); ``POST``: redeem."""
    email = cast(Email, provider)
    storage = state.config.storage.require(*EMAIL_METHODS, feature="Email login")
    if state.request.method != "POST":
        return _open_link(state, storage, email, params, callback_url)
    pending = read_pending(state, email)
    if "code" in params and "token" not in params:
        return _redeem_code(state, storage, email, params.get("code"), pending)
    token, identifier = params.get("token"), params.get("email")
    if not isinstance(token, str) or not token or not isinstance(identifier, str):
        raise Verification("The sign-in form carries no token")
    if not email.confirm_link:  # Auth.js's link: any browser, no binding
        landing = state.redirect(pending.callback_url) if pending is not None else callback_url
        return _redeem_link(state, storage, email, identifier, token, None, landing)
    # Checked before anything is consumed: a blind POST burns nothing.
    if pending is None or pending.identifier != identifier or not _is_this_grants(pending, token):
        return _not_redeemable(state, email, token, status=400)
    landing = state.redirect(pending.callback_url)
    return _redeem_link(state, storage, email, identifier, token, pending.binding, landing)


def _open_link(
    state: AuthState,
    storage: Storage,
    email: Email,
    params: Mapping[str, object],
    callback_url: str,
) -> HttpResponse:
    token, identifier = params.get("token"), params.get("email")
    if not isinstance(token, str) or not token or not isinstance(identifier, str):
        raise Verification("The sign-in link carries no token")
    if not email.confirm_link:  # Auth.js
        return _redeem_link(state, storage, email, identifier, token, None, callback_url)
    # No page looks the token up: no state, no timing or existence oracle. What
    # decides is the pending cookie alone, which a mail scanner does not have.
    pending = read_pending(state, email)
    if pending is None or pending.identifier != identifier or not _is_this_grants(pending, token):
        return _not_redeemable(state, email, token, status=200)
    return _render(
        state,
        "webauth/email_confirm.html",
        {
            "action": f"{state.base_url}/callback/{email.id}",
            "csrf_token_value": state.form_csrf_token(),
            "token": token,
            "identifier": identifier,
            "callback_url": state.redirect(pending.callback_url),
            "provider": {"id": email.id, "name": email.name},
        },
        200,
    )


def _not_redeemable(state: AuthState, email: Email, token: str, *, status: int) -> HttpResponse:
    """A link this browser cannot redeem: which page tells the truth about it.

    A link this browser asked for (the pending cookie remembers it) whose grant
    was used here, has expired or was voided by a newer request is no longer
    valid: ``Verification`` (the error page). Any other link is another
    browser's: the *finish where you started* page.
    """
    if _asked_for(state, email, token):
        raise Verification("The sign-in link was used, has expired or was replaced")
    return _elsewhere(state, email, status=status)


def _elsewhere(state: AuthState, email: Email, *, status: int) -> HttpResponse:
    """The page for a link opened in a browser that did not ask for it."""
    return _render(
        state,
        "webauth/email_elsewhere.html",
        {
            "has_code": email.code is not None,
            "signin_url": state.page_url("signin", raw=True),
            "provider": {"id": email.id, "name": email.name},
        },
        status,
    )


def _redeem_link(
    state: AuthState,
    storage: Storage,
    email: Email,
    identifier: str,
    token: str,
    binding: str | None,
    callback_url: str,
) -> HttpResponse:
    hashed = grant_hash(email, token, binding, state.config.secret)
    record = storage.use_verification_token(identifier, hashed)
    # Auth.js's adapters return an expired token too (and delete it): the flow
    # judges. Expired at its expiry instant, as the adapters' own checks have it.
    if record is None or aware(record.expires) <= datetime.now(UTC):
        raise Verification("The sign-in link is unknown, used or expired")
    return _sign_in(state, storage, email, identifier, callback_url)


def _redeem_code(
    state: AuthState,
    storage: Storage,
    email: Email,
    typed: Any,
    pending: Pending | None,
) -> HttpResponse:
    if pending is None:
        payload = _payload(state, email)
        if payload is not None and _is_over(payload):
            # This browser asked, and the grant was used here or has expired.
            raise Verification("The sign-in code was used or has expired")
        return _elsewhere(state, email, status=400)
    if not redeem_code(state, storage, email, pending.identifier, typed, pending.binding):
        return _wrong_code(state, email, pending)
    return _sign_in(state, storage, email, pending.identifier, state.redirect(pending.callback_url))


def redeem_code(
    state: AuthState,
    storage: Storage,
    email: Email,
    identifier: str,
    typed: Any,
    binding: str,
) -> bool:
    """Use up the grant of *identifier* whose code is *typed*: whether it was right.

    *binding* is the one the grant was made with (:func:`grant_hash`): the
    browser's pending cookie holds it, an app got it when it asked. A code
    with another binding is a wrong code. A wrong code counts against the
    grant (the adapter voids it after ``code_max_attempts``) and against
    ``code_failed`` (``RateLimited`` beyond it); a right one gives its attempt back.
    """
    if email.code is None:
        raise Verification(f"Provider {email.id!r} sends no codes")
    return use_code(state.request, state.config, storage, email, identifier, typed, binding)


def use_code(
    request: Any,
    config: Config,
    storage: Storage,
    email: Email,
    identifier: str,
    typed: Any,
    binding: str | None = None,
) -> bool:
    """:func:`redeem_code` for any grant of *email* (the account center's address change too).

    *binding*: the grant's, or ``None`` for a grant made without one (the
    account center's, which the signed-in session binds).
    """
    # A failure is counted before the check and given back on success, so that
    # concurrent guesses cannot pass the limit between check and count.
    decision = ratelimit.hit(request, "code_failed", identifier, config=config)
    if not decision:
        raise RateLimited("Too many wrong codes", retry_after=decision.retry_after)
    code = email.clean_code(typed)
    record = None
    if code is not None:  # what cannot be a code is wrong without asking the adapter
        record = storage.use_verification_code(
            identifier, grant_hash(email, code, binding, config.secret), email.code_max_attempts
        )
    if record is None or aware(record.expires) <= datetime.now(UTC):
        return False
    ratelimit.refund(decision)
    return True


def _wrong_code(state: AuthState, email: Email, pending: Pending) -> HttpResponse:
    """Back to the code form with the error (or its URL, for JSON clients and custom pages)."""
    state.config.logger.error(Verification("A wrong or expired sign-in code was entered"))
    pending = replace(pending, attempts=pending.attempts + 1)
    if returns_redirect(state.request) or state.config.pages.verify_request:
        params = {"provider": email.id, "type": "email", "error": "Verification"}
        response: HttpResponse = redirect(
            state.page_url("verify-request", {**params, "code": "invalid_code"})
        )
    else:
        context = {
            "url": state.origin,
            "host": state.request.get_host(),
            **verify_request_context(state, pending),
            "code_error": wrong_code_message(email.code_max_attempts - pending.attempts),
        }
        response = _render(state, "webauth/verify_request.html", context, 400)
    _write_pending(state, response, email, pending)
    return response


def wrong_code_message(left: int) -> str:
    """What a wrong code is told, with the *left* attempts (an email grant's, or a reset's)."""
    if left <= 0:
        return _("This code can no longer be used. Ask for a new email.")
    return ngettext(
        "That code is not right, or it has expired. Check it and try again "
        "(%(left)d attempt left), or ask for a new email.",
        "That code is not right, or it has expired. Check it and try again "
        "(%(left)d attempts left), or ask for a new email.",
        left,
    ) % {"left": left}


def _sign_in(
    state: AuthState, storage: Storage, email: Email, identifier: str, callback_url: str
) -> HttpResponse:
    response = finish(state, attempt_for(storage, email, identifier, callback_url))
    _write_used(state, response, email)
    return response


def attempt_for(storage: Storage, email: Email, identifier: str, callback_url: str) -> EmailAttempt:
    """The sign-in of *identifier*, whose grant was just used up."""
    existing = storage.get_user_by_email(identifier)
    return EmailAttempt(
        provider_id=email.id, callback_url=callback_url, identifier=identifier, existing=existing
    )


# -- the verify-request page -----------------------------------------------------------------


def verify_request_context(state: AuthState, pending: Pending | None = None) -> dict[str, object]:
    """What the ``verify-request`` page shows besides Auth.js's text.

    With a pending cookie of an email provider: the address the message went
    to, a link to start again and, when the provider sends codes, the code
    form (it POSTs ``csrfToken`` and ``code`` to the provider's callback).
    """
    if pending is None:
        pending = read_pending(state)
    if pending is None:
        return {}
    provider = state.config.get_provider(pending.provider)
    if not isinstance(provider, Email):
        return {}
    context: dict[str, object] = {
        "identifier": pending.identifier,
        "signin_url": state.page_url("signin", raw=True),
        "provider": {"id": provider.id, "name": provider.name},
    }
    if provider.code is not None:
        context["code_form"] = {
            "action": f"{state.base_url}/callback/{provider.id}",
            "inputmode": "numeric" if provider.code == "digits" else "text",
            "placeholder": "1234-5678" if provider.code == "digits" else "ABCD-EFGH",
        }
        context["csrf_token_value"] = state.form_csrf_token()
    return context


# -- what a redemption stores -----------------------------------------------------------------


@dataclass(slots=True)
class EmailAttempt(Attempt):
    """A redeemed grant: *identifier* proved they read the mail sent to it."""

    amr = ("email",)

    provider_id: str
    callback_url: str
    identifier: str
    #: The user with this address when the grant was redeemed, if any.
    existing: AdapterUser | None = None
    #: Auth.js's stand-in for a new user, in the ``sign_in`` callback.
    stand_in: AdapterUser | None = None

    def __post_init__(self) -> None:
        if self.existing is None:
            self.stand_in = AdapterUser(id=str(uuid.uuid4()), email=self.identifier)

    def sign_in_params(self) -> dict[str, object]:
        user = self.existing or self.stand_in
        assert user is not None
        return {"user": user, "account": _account(self.provider_id, self.identifier, user.id)}

    def store(self, state: AuthState) -> SignedIn:
        """Set ``email_verified`` at the first sign-in, or create the user.

        A new user gets an ``email`` account (``providerAccountId``: the
        address), created with the user in one transaction where the adapter
        can, and the ``create_user`` and ``link_account`` events. Auth.js writes
        no account row for email sign-ins; webauth does, so that the address
        counts as a way in (``count_sign_in_methods``) and appears among the
        user's linked accounts.
        """
        config = state.config
        # Made by a flow that required a configured adapter; never the fallback.
        storage = config.storage.require()
        signal: SignalSender = {"sender": self.provider_id, "request": state.request}
        now = datetime.now(UTC)
        if self.existing is None:
            account = AdapterAccount(
                user_id="",
                type="email",
                provider=self.provider_id,
                provider_account_id=self.identifier,
            )
            try:
                user, linked = create_and_link(
                    storage, AdapterUser(id="", email=self.identifier, email_verified=now), account
                )
            except EmailInUse:
                # Another request gave a new user this address a moment ago
                # (another method's first sign-in): this one signs in to it.
                self.existing = storage.get_user_by_email(self.identifier)
                if self.existing is None:
                    raise
            else:
                emit(config, "create_user", **signal, user=user)
                emit(config, "link_account", **signal, user=user, account=linked, profile=user)
                return self._signed_in(user, is_new_user=True)
        user = self.existing
        proven = prove_address(state, user, self.provider_id, self.identifier, notify=False)
        if proven:
            # A passkey registration made this user under the address, and
            # what it brought is gone: the address is now the way in.
            account = AdapterAccount(
                user_id=user.id,
                type="email",
                provider=self.provider_id,
                provider_account_id=self.identifier,
            )
            if storage.get_account(self.identifier, self.provider_id) is None:
                linked = storage.link_account(account) or account
                emit(config, "link_account", **signal, user=user, account=linked, profile=user)
        dated = False
        if user.email_verified is None:
            # The spec: the date of the first successful sign-in (Auth.js
            # overwrites it at every sign-in). A user model without the
            # field keeps none: nothing changed, no event.
            updated = storage.update_user({"id": user.id, "email_verified": now})
            user = updated or user
            dated = updated is None or updated.email_verified is not None
        if proven or dated:
            # One event for the proof and its date (prove_address sent none).
            emit(config, "update_user", **signal, user=user)
        return self._signed_in(user, is_new_user=False)

    def _signed_in(self, user: AdapterUser, *, is_new_user: bool) -> SignedIn:
        return SignedIn(
            user=user,
            user_dict={"id": user.id, "name": user.name, "email": user.email, "image": user.image},
            account=_account(self.provider_id, self.identifier, user.id),
            is_new_user=is_new_user,
        )
