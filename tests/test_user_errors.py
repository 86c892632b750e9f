"""What a visitor did is no server error (issue 13, point 6).

A re-opened, replayed or forged OAuth callback and an unknown provider or route
in the URL show the visitor "Sign-in expired" (``error=SignInExpired``, status
200) instead of "Server error" (``Configuration``, status 500), and are logged as
one WARNING line (``[auth][warn][<type>]``) naming what was asked for, with no
traceback and no "Internal Server Error". A wrong password or code, an expired
form or link, a refused passkey log at WARNING too. The server's own faults stay
errors. Every log line points at webauth's docs/errors.md, which has an anchor
for every error type and warning code.
"""

import logging
import re
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from webauth import errors
from webauth.conf import build_config, startup_warnings
from webauth.errors import (
    ERRORS_DOC,
    SIGN_IN_EXPIRED,
    AuthError,
    CallbackRouteError,
    InvalidCheck,
    checkout_doc_url,
    doc_link,
    error_type_for_url,
)
from webauth.logger import AuthLogger
from webauth.pages import ERROR_PAGES
from webauth.providers import Credentials, DjangoCredentials
from webauth.providers.oauth import OIDC
from webauth.test import force_sign_in

from .support.helpers import csrf_pair, query
from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, authorize, begin, callback, start_idp

ROOT = Path(__file__).resolve().parent.parent
#: Where every line's "Read more" points, up to the anchor (pinned below).
DOCS = doc_link("")
SIGN_IN_EXPIRED_URL = "http://testserver/auth/error?error=SignInExpired"


@pytest.fixture
def log(caplog):
    """Every record of every logger (webauth's, django.request's), from DEBUG up."""
    caplog.set_level(logging.DEBUG)
    return caplog


def records_at(log, level):
    return [r for r in log.records if r.levelno >= level and r.name != "mail.log"]


def assert_only_warnings(log, *expected):
    """No ERROR anywhere; one webauth WARNING line per *expected* prefix, no traceback."""
    assert records_at(log, logging.ERROR) == [], [r.getMessage() for r in log.records]
    warnings = [r for r in log.records if r.name == "webauth" and r.levelno == logging.WARNING]
    messages = [r.getMessage() for r in warnings]
    assert len(messages) == len(expected), messages
    for message, prefix in zip(messages, expected, strict=True):
        assert message.startswith(prefix), message
        assert "\n" not in message
        assert f"Read more at {DOCS}" in message
    assert all(r.exc_info is None for r in log.records)
    text = log.text
    assert "Internal Server Error" not in text and "Traceback" not in text
    assert "authjs.dev" not in text


def the_page(client, url):
    page = client.get(url)
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    return page.content.decode()


# -- the OAuth callback ------------------------------------------------------------------------


@pytest.fixture
def oidc_site(settings):
    """An OpenID provider that is never reached: the state check comes first."""
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [
            DjangoCredentials(),
            OIDC(id="acme", issuer="https://idp.invalid", client_id="c", client_secret="s"),
        ],
    }


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse", first_name="Alice"
    )


@pytest.mark.django_db
def test_a_bogus_callback_is_a_sign_in_expired(client, oidc_site, log):
    response = client.get("/auth/callback/acme?code=x&state=y")
    assert response.status_code == 302
    assert response["Location"] == SIGN_IN_EXPIRED_URL
    text = the_page(client, response["Location"])
    assert "Sign-in expired" in text and "Server error" not in text
    assert 'href="http://testserver/auth/signin"' in text  # try again
    assert "You are signed in" not in text
    assert_only_warnings(log, "[auth][warn][InvalidCheck] The authjs.state cookie is missing")


@pytest.mark.django_db
def test_a_callback_opened_while_signed_in_says_so(client, oidc_site, alice, log):
    force_sign_in(client, alice)
    response = client.get("/auth/callback/acme?code=x&state=y")
    assert response["Location"] == SIGN_IN_EXPIRED_URL
    text = the_page(client, response["Location"])
    assert "Sign-in expired" in text
    assert "You are signed in as <strong>Alice</strong>." in text
    assert 'id="webauth-continue" href' not in text  # attribute order as written
    assert re.search(r'href="http://testserver"[^>]*id="webauth-continue"', text)
    assert_only_warnings(log, "[auth][warn][InvalidCheck]")


@pytest.mark.django_db
def test_a_forged_state_is_a_sign_in_expired(client, oidc_site, settings, log):
    from webauth import jwt as jose

    state_cookie = jose.encode(
        token={"value": "the-real-state", "provider": "acme"},
        secret=settings.WEBAUTH["secret"],
        salt="authjs.state",
        max_age=900,
    )
    client.cookies["authjs.state"] = state_cookie
    response = client.get("/auth/callback/acme?code=x&state=forged")
    assert response["Location"] == SIGN_IN_EXPIRED_URL
    assert_only_warnings(log, "[auth][warn][InvalidCheck] The state parameter does not match")


@pytest.mark.django_db
def test_the_person_saying_no_is_a_warning_the_provider_refusing_is_an_error(
    client, oidc_site, settings, log
):
    from webauth import jwt as jose

    def with_state():
        client.cookies["authjs.state"] = jose.encode(
            token={"value": "s", "provider": "acme"},
            secret=settings.WEBAUTH["secret"],
            salt="authjs.state",
            max_age=900,
        )

    with_state()
    response = client.get("/auth/callback/acme?state=s&error=access_denied")
    assert query(response["Location"]) == {"error": "OAuthCallbackError"}
    assert_only_warnings(log, "[auth][warn][OAuthCallbackError] access_denied")
    log.clear()
    with_state()
    response = client.get("/auth/callback/acme?state=s&error=unauthorized_client")
    assert query(response["Location"]) == {"error": "OAuthCallbackError"}
    record = records_at(log, logging.WARNING)[0]
    assert record.levelno == logging.ERROR
    assert record.getMessage().startswith("[auth][error] OAuthCallbackError: unauthorized_client")


# -- the real provider: the callback URL opened again after signing in ----------------------------


@pytest.fixture
def idp(live_server):
    cache.clear()
    return start_idp(live_server)


@pytest.fixture
def rp(settings, idp):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [
            DjangoCredentials(),
            OIDC(
                id="example",
                name="Example IdP",
                issuer=idp.issuer,
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
            ),
        ],
        "adapter": "webauth.adapters.django.DjangoAdapter",
    }


@pytest.mark.django_db(transaction=True)
def test_reopening_the_callback_after_signing_in(client, idp, rp, log):
    location = authorize(idp, begin(client))
    assert callback(client, location)["Location"] == "http://testserver/after/"
    log.clear()

    again = callback(client, location)  # Back, or the history, or a reload
    assert again["Location"] == SIGN_IN_EXPIRED_URL
    text = the_page(client, again["Location"])
    assert "Sign-in expired" in text
    assert "You are signed in as <strong>Ida Provider</strong>." in text
    assert_only_warnings(log, "[auth][warn][InvalidCheck] The authjs.state cookie is missing")


@pytest.mark.django_db(transaction=True)
def test_a_code_used_twice_is_a_sign_in_expired(client, idp, rp, log):
    # Two tabs finishing the same sign-in: the second one's code is spent.
    location = authorize(idp, begin(client))
    saved = {name: morsel.value for name, morsel in client.cookies.items()}
    assert callback(client, location)["Location"] == "http://testserver/after/"
    for name, value in saved.items():
        client.cookies[name] = value
    log.clear()
    response = callback(client, location)
    assert response["Location"] == SIGN_IN_EXPIRED_URL
    assert_only_warnings(
        log, "[auth][warn][CallbackRouteError] The token request to provider 'example' failed"
    )


# -- unknown providers and routes in the URL ---------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path", "logged"),
    [
        ("get", "/auth/signin/nope", "Unsupported action GET signin with provider 'nope'"),
        ("post", "/auth/signin/nope", "Unknown provider 'nope'"),
        ("get", "/auth/callback/nope", "Unknown provider 'nope'"),
        ("get", "/auth/webauthn-options/nope", "Unknown provider 'nope'"),
        ("get", "/auth/callback/credentials", "credentials sign-in does not support GET"),
        ("post", "/auth/csrf", "Unsupported action POST csrf"),
    ],
)
def test_a_url_the_visitor_typed_is_no_server_error(client, log, method, path, logged):
    data = {"csrfToken": csrf_pair(client)} if method == "post" else None
    log.clear()
    response = getattr(client, method)(path, data)
    assert response.status_code == 302
    assert response["Location"] == SIGN_IN_EXPIRED_URL
    assert "Sign-in expired" in the_page(client, response["Location"])
    kind = "UnknownAction" if "Unsupported" in logged else "InvalidProvider"
    assert_only_warnings(log, f"[auth][warn][{kind}] {logged}")


@pytest.mark.django_db
def test_get_signin_with_a_known_provider_says_how_to_sign_in(client, log):
    response = client.get("/auth/signin/credentials")
    assert response["Location"] == SIGN_IN_EXPIRED_URL
    assert_only_warnings(
        log,
        "[auth][warn][UnknownAction] Unsupported action GET signin with provider 'credentials' "
        "(a sign-in with a provider starts with a POST",
    )


@pytest.mark.django_db
def test_the_provider_id_in_the_log_is_escaped(client, log):
    response = client.get("/auth/signin/evil%0A%5Bauth%5D%5Berror%5D%20forged%1b%5B31m")
    assert response["Location"] == SIGN_IN_EXPIRED_URL
    (record,) = [r for r in log.records if r.name == "webauth"]
    message = record.getMessage()
    assert "\n" not in message and "\x1b" not in message
    assert "with provider 'evil\\n[auth][error] forged\\x1b[31m'" in message


# -- wrong passwords, codes and passkeys ----------------------------------------------------------


@pytest.mark.django_db
def test_a_wrong_password_is_a_warning(client, alice, log):
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "alice", "password": "wrong"},
    )
    assert response.status_code in (302, 400)
    assert_only_warnings(log, "[auth][warn][CredentialsSignin]")


@pytest.mark.django_db
def test_an_expired_form_and_a_refusing_callback_are_warnings(client, alice, settings, log):
    client.post(
        "/auth/callback/credentials",
        {"csrfToken": "f" * 64, "username": "alice", "password": "correct horse"},
    )
    assert_only_warnings(log, "[auth][warn][MissingCSRF]")
    log.clear()
    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"sign_in": lambda **kw: False}}
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "alice", "password": "correct horse"},
    )
    assert query(response["Location"]) == {"error": "AccessDenied"}
    assert_only_warnings(log, "[auth][warn][AccessDenied]")


@pytest.mark.django_db
def test_email_codes_and_links_that_fail_are_warnings(client, settings, mailoutbox, log):
    from webauth.providers import Email

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "providers": [Email(from_email="no-reply@example.com")],
    }
    client.post("/auth/signin/email", {"csrfToken": csrf_pair(client), "email": "bo@example.com"})
    log.clear()
    wrong = client.post(
        "/auth/callback/email", {"csrfToken": csrf_pair(client), "code": "AAAA-AAAA"}
    )
    assert wrong.status_code == 400
    messages = [r.getMessage() for r in log.records if r.name == "webauth"]
    assert messages[0].startswith("[auth][warn][Verification]")
    assert records_at(log, logging.ERROR) == []
    # A link this browser asked for, voided by its next request.
    (first_link,) = re.findall(r"\btoken=(\w+)", mailoutbox[0].body)
    client.post("/auth/signin/email", {"csrfToken": csrf_pair(client), "email": "bo@example.com"})
    log.clear()
    used = client.post(
        "/auth/callback/email",
        {"csrfToken": csrf_pair(client), "token": first_link, "email": "bo@example.com"},
    )
    assert query(used["Location"]) == {"error": "Verification"}
    assert_only_warnings(log, "[auth][warn][Verification]")
    log.clear()
    typo = client.post("/auth/signin/email", {"csrfToken": csrf_pair(client), "email": "bo@"})
    assert typo.status_code == 400
    assert records_at(log, logging.ERROR) == []


@pytest.mark.django_db
def test_a_refused_passkey_is_a_warning(client, settings, log):
    from webauth.providers import Passkey

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey()],
    }
    client.get("/auth/csrf")  # the configuration is built (and warns experimental-webauthn)
    log.clear()
    response = client.post(
        "/auth/callback/passkey", {"action": "authenticate", "data": '{"id": "x"}'}
    )
    assert query(response["Location"]) == {"error": "WebAuthnVerificationError"}
    assert_only_warnings(log, "[auth][warn][WebAuthnVerificationError]")


def test_a_passkey_refused_for_the_site_s_set_up_is_an_error():
    from webauth.flows.webauthn import setup_mismatch

    assert setup_mismatch(ValueError('Unexpected client data origin "https://x", expected "y"'))
    assert setup_mismatch(ValueError("Unexpected RP ID hash"))
    assert not setup_mismatch(ValueError("Could not verify authentication signature"))
    assert not setup_mismatch(ValueError("User verification is required but user was not"))


# -- what stays an error ----------------------------------------------------------------------


def crash(credentials, request):
    raise RuntimeError("database down")


@pytest.mark.django_db
def test_the_server_s_own_faults_stay_errors(client, settings, log):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [Credentials(credentials={"x": {}}, authorize=crash)],
    }
    response = client.post("/auth/callback/credentials", {"csrfToken": csrf_pair(client)})
    assert query(response["Location"]) == {"error": "Configuration"}
    errors_logged = [r.getMessage() for r in records_at(log, logging.ERROR)]
    assert errors_logged[0].startswith("[auth][error] CallbackRouteError: Read more at")
    assert "Traceback" in errors_logged[1] and "database down" in errors_logged[1]


def test_default_logger_levels(caplog):
    caplog.set_level(logging.DEBUG, logger="webauth")
    AuthLogger().error(InvalidCheck("stale", user_caused=True))
    AuthLogger().error(InvalidCheck("pkce cookie missing"))
    first, second = caplog.records[0], caplog.records[1]
    assert (first.levelno, first.getMessage()) == (
        logging.WARNING,
        f"[auth][warn][InvalidCheck] stale. Read more at {DOCS}invalidcheck",
    )
    assert second.levelno == logging.ERROR
    assert second.getMessage().startswith("[auth][error] InvalidCheck: pkce cookie missing.")


def test_user_caused_errors_are_shown_as_sign_in_expired():
    assert error_type_for_url(InvalidCheck("x", user_caused=True)) == SIGN_IN_EXPIRED
    assert error_type_for_url(InvalidCheck("x")) == "Configuration"
    assert error_type_for_url(CallbackRouteError(user_caused=True)) == SIGN_IN_EXPIRED
    # A client-safe type keeps its own name, whoever caused it.
    assert error_type_for_url(errors.CredentialsSignin()) == "CredentialsSignin"
    status, heading, _message, _hint = ERROR_PAGES[SIGN_IN_EXPIRED]
    assert status == 200 and str(heading) == "Sign-in expired"


# -- docs/errors.md -----------------------------------------------------------------------------


def _anchors():
    text = (ROOT / ERRORS_DOC).read_text()
    headings = re.findall(r"^#{2,4} (.+)$", text, flags=re.MULTILINE)
    # GitHub's anchors: lower case, punctuation but "-" and "_" dropped, spaces to "-".
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _error_types():
    return {
        cls.type
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, AuthError)
    }


def _warning_codes():
    codes = set()
    for path in (ROOT / "webauth").rglob("*.py"):
        codes |= set(re.findall(r"logger\.warn\(\s*\"([a-z-]+)\"", path.read_text()))
    # The start-up warnings, of a configuration with every one's cause.
    risky = {"debug": True, "skip_csrf_check": True, "experimental": {"enable_webauthn": True}}
    codes |= set(startup_warnings(build_config(risky, {}.get, warn=False)))
    return codes


def test_every_error_type_and_warning_code_has_its_anchor():
    anchors = _anchors()
    assert {"csrf-disabled", "debug-enabled", "experimental-webauthn"} <= _warning_codes()
    wanted = {t.lower() for t in _error_types()} | {"signinexpired", "configuration"}
    wanted |= _warning_codes()
    assert wanted - anchors == set()


def test_log_lines_point_at_our_docs():
    for name in _error_types():
        error = getattr(errors, name)("x")
        assert str(error) == f"x. Read more at {DOCS}{name.lower()}"


def test_in_a_checkout_the_link_is_a_file_url_a_terminal_can_open():
    # This checkout: docs/errors.md beside the package, and webauth's pyproject.toml.
    link = doc_link("experimental-webauthn")
    assert link == (ROOT / ERRORS_DOC).as_uri() + "#experimental-webauthn"
    assert link.startswith("file:///") and " " not in link
    parts = urlsplit(link)
    assert Path(url2pathname(parts.path)) == ROOT / ERRORS_DOC
    assert parts.fragment in _anchors()
    # An anchor that needs escaping is escaped (a terminal's link ends at a space).
    assert doc_link("a b\\n") == (ROOT / ERRORS_DOC).as_uri() + "#a%20b%5Cn"


def _project(tmp_path, *, name="django-webauth", doc=True, pyproject=True):
    (tmp_path / "webauth").mkdir(parents=True)
    if doc:
        (tmp_path / "docs").mkdir()
        (tmp_path / ERRORS_DOC).write_text("# Errors and warnings\n")
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    return tmp_path / "webauth"


def test_the_checkouts_docs_are_found_beside_the_package(tmp_path):
    package = _project(tmp_path / "with space")
    assert checkout_doc_url(package) == (tmp_path / "with space" / ERRORS_DOC).as_uri()
    assert "%20" in checkout_doc_url(package)


@pytest.mark.parametrize(
    "project",
    [
        {"doc": False},  # an installed wheel: no docs/ beside the package
        {"pyproject": False},
        {"name": "someone-else"},  # a copied package under another project's docs
    ],
    ids=repr,
)
def test_elsewhere_the_link_is_the_plain_reference(tmp_path, monkeypatch, project):
    package = _project(tmp_path, **project)
    assert checkout_doc_url(package) is None
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "docs").mkdir()
    (tmp_path / "bad" / ERRORS_DOC).write_text("x")
    (tmp_path / "bad" / "pyproject.toml").write_text("not = [toml")
    assert checkout_doc_url(tmp_path / "bad" / "webauth") is None
    monkeypatch.setattr(errors, "_doc_url", lambda: None)
    assert doc_link("verification") == "webauth's docs/errors.md#verification"
    assert str(errors.Verification("x")) == "x. Read more at webauth's docs/errors.md#verification"
