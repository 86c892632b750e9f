"""Errors (spec 7, protocol 10) and logging in Auth.js's format (protocol 11.2)."""

import json
import logging
import re
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

import webauth
from webauth import errors
from webauth.conf import build_config
from webauth.errors import (
    CLIENT_SAFE_ERRORS,
    SIGN_IN_ERRORS,
    AccessDenied,
    AuthError,
    CredentialsSignin,
    doc_link,
    error_type_for_url,
    is_sign_in_error,
)
from webauth.logger import AuthLogger
from webauth.test import force_sign_in

from .support.helpers import csrf_pair

#: Where every line's "Read more" points, up to the anchor (test_user_errors pins its form).
DOCS = doc_link("")
SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
WRONG_PASSWORD = "Tr0ub4dor&3-wrong"

# Protocol 10.1, in its order: the 32 error types of Auth.js.
AUTHJS_TYPES = [
    "AccessDenied",
    "AdapterError",
    "CallbackRouteError",
    "ErrorPageLoop",
    "EventError",
    "InvalidCallbackUrl",
    "CredentialsSignin",
    "InvalidEndpoints",
    "InvalidCheck",
    "JWTSessionError",
    "MissingAdapter",
    "MissingAdapterMethods",
    "MissingAuthorize",
    "MissingSecret",
    "OAuthAccountNotLinked",
    "OAuthCallbackError",
    "OAuthProfileParseError",
    "SessionTokenError",
    "OAuthSignInError",
    "EmailSignInError",
    "SignOutError",
    "UnknownAction",
    "UnsupportedStrategy",
    "InvalidProvider",
    "UntrustedHost",
    "Verification",
    "MissingCSRF",
    "AccountNotLinked",
    "DuplicateConditionalUI",
    "MissingWebAuthnAutocomplete",
    "WebAuthnVerificationError",
    "ExperimentalFeatureNotEnabled",
]
SIGN_IN_KIND = {
    "CredentialsSignin",
    "OAuthAccountNotLinked",
    "OAuthCallbackError",
    "OAuthSignInError",
    "EmailSignInError",
    "MissingCSRF",
    "AccountNotLinked",
}
CLIENT_SAFE = {
    "CredentialsSignin",
    "OAuthAccountNotLinked",
    "OAuthCallbackError",
    "AccessDenied",
    "Verification",
    "MissingCSRF",
    "AccountNotLinked",
    "WebAuthnVerificationError",
}


@pytest.fixture
def webauth_log(caplog):
    caplog.set_level(logging.DEBUG, logger="webauth")
    return caplog


def webauth_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "webauth"]


# -- the error classes ----------------------------------------------------------------


def test_there_are_32_authjs_types():
    assert len(AUTHJS_TYPES) == len(set(AUTHJS_TYPES)) == 32


@pytest.mark.parametrize("name", AUTHJS_TYPES)
def test_every_authjs_error_type_is_an_auth_error(name):
    cls = getattr(errors, name)
    assert issubclass(cls, AuthError)
    assert cls.type == name
    assert name in errors.__all__
    error = cls("something happened")
    assert error.type == name
    assert error.message == "something happened"
    assert error.cause is None
    assert str(error) == (f"something happened. Read more at {DOCS}{name.lower()}")


@pytest.mark.parametrize("name", AUTHJS_TYPES)
def test_sign_in_kind_and_client_safe(name):
    error = getattr(errors, name)()
    assert is_sign_in_error(error) is (name in SIGN_IN_KIND)
    # webauth: an error the visitor caused that Auth.js reports as Configuration
    # (an unknown route in the URL, by default) is shown as SignInExpired.
    hidden = errors.SIGN_IN_EXPIRED if error.user_caused else "Configuration"
    assert error_type_for_url(error) == (name if name in CLIENT_SAFE else hidden)
    assert error_type_for_url(getattr(errors, name)(user_caused=False)) == (
        name if name in CLIENT_SAFE else "Configuration"
    )


def test_module_sets_match_the_protocol():
    # RateLimited and ChallengeFailed are webauth's own (Auth.js has no rate limits
    # and no bot challenge): sign-in errors the client may see, so that the sign-in
    # page can explain them.
    own = {"RateLimited", "ChallengeFailed"}
    assert SIGN_IN_ERRORS - own == SIGN_IN_KIND
    assert CLIENT_SAFE_ERRORS - own == CLIENT_SAFE
    assert own <= SIGN_IN_ERRORS and own <= CLIENT_SAFE_ERRORS


def test_base_class():
    error = AuthError()
    assert error.type == "AuthError"
    assert str(error) == f"Read more at {DOCS}autherror"
    assert error_type_for_url(error) == "Configuration"
    assert not is_sign_in_error(error)


@pytest.mark.parametrize("exc", [ValueError("x"), RuntimeError(), KeyError("k")])
def test_other_exceptions_are_configuration_errors(exc):
    assert error_type_for_url(exc) == "Configuration"
    assert not is_sign_in_error(exc)


def test_cause():
    original = ValueError("database down")
    error = errors.AdapterError("adapter_get_user failed", cause={"err": original, "id": "7"})
    assert error.cause == {"err": original, "id": "7"}
    assert error.cause["err"] is original


def test_wrapping_an_exception_keeps_it_as_cause():
    original = KeyError("missing")
    error = errors.CallbackRouteError(original)
    assert error.cause == {"err": original}
    assert error.message == str(original)


class WrongCode(CredentialsSignin):
    code = "wrong_code"


class TooManyAttempts(WrongCode):
    pass


class MyDenied(AccessDenied):
    pass


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (WrongCode, "CredentialsSignin"),
        (TooManyAttempts, "CredentialsSignin"),
        (MyDenied, "AccessDenied"),
    ],
)
def test_project_subclass_keeps_its_parent_type(cls, expected):
    error = cls()
    assert cls.type == error.type == expected
    assert error_type_for_url(error) == expected
    assert str(error).endswith(f"{DOCS}{expected.lower()}")


def test_project_subclass_of_credentials_signin_keeps_its_code_and_routing():
    assert WrongCode().code == "wrong_code"
    assert TooManyAttempts().code == "wrong_code"
    assert is_sign_in_error(WrongCode())
    assert not is_sign_in_error(MyDenied())


def test_credentials_signin_code():
    assert CredentialsSignin().code == "credentials"
    assert CredentialsSignin(code="locked").code == "locked"
    assert CredentialsSignin.code == "credentials"  # the instance did not change the class


# -- default logger format --------------------------------------------------------------


def test_error_format(webauth_log):
    AuthLogger().error(AccessDenied("not today"))
    (record,) = webauth_log.records
    assert record.name == "webauth" and record.levelno == logging.ERROR
    assert record.getMessage() == (
        f"[auth][error] AccessDenied: not today. Read more at {DOCS}accessdenied"
    )


def test_error_with_cause_logs_the_cause_stack_and_details(webauth_log):
    try:
        raise ConnectionError("database down")
    except ConnectionError as exc:
        original = exc
    AuthLogger().error(
        errors.AdapterError("adapter_get_user failed", cause={"err": original, "user_id": "7"})
    )
    lines = webauth_lines(webauth_log)
    assert lines[0].startswith("[auth][error] AdapterError: adapter_get_user failed.")
    assert lines[1].startswith("[auth][cause]: Traceback (most recent call last):")
    assert lines[1].rstrip().endswith("ConnectionError: database down")
    assert lines[2].startswith("[auth][details]: ")
    assert json.loads(lines[2].removeprefix("[auth][details]: ")) == {"user_id": "7"}
    assert len(lines) == 3


def test_error_with_only_err_in_cause_has_no_details_line(webauth_log):
    AuthLogger().error(errors.EventError("handler raised", cause={"err": ValueError("x")}))
    lines = webauth_lines(webauth_log)
    assert len(lines) == 2
    assert lines[1] == "[auth][cause]: ValueError: x"


def test_raised_error_without_cause_logs_its_stack(webauth_log):
    try:
        raise errors.InvalidCheck("state mismatch")
    except errors.InvalidCheck as exc:
        AuthLogger().error(exc)
    lines = webauth_lines(webauth_log)
    assert lines[0].startswith("[auth][error] InvalidCheck: state mismatch.")
    assert "test_raised_error_without_cause_logs_its_stack" in lines[1]  # the stack


def test_non_auth_error_uses_its_class_name(webauth_log):
    AuthLogger().error(RuntimeError("boom"))
    assert webauth_lines(webauth_log) == ["[auth][error] RuntimeError: boom"]


def test_warn_format(webauth_log):
    AuthLogger().warn("csrf-disabled")
    (record,) = webauth_log.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (f"[auth][warn][csrf-disabled] Read more: {DOCS}csrf-disabled")


def test_debug_is_off_by_default(webauth_log):
    AuthLogger().debug("CREATE_STATE", {"value": 1})
    assert webauth_log.records == []


def test_debug_format(webauth_log):
    auth_logger = AuthLogger(debug_enabled=True)
    auth_logger.debug("adapter_get_user")
    auth_logger.debug("CREATE_STATE", {"value": "abc", "maxAge": 900})
    records = webauth_log.records
    assert [r.levelno for r in records] == [logging.DEBUG, logging.DEBUG]
    assert records[0].getMessage() == "[auth][debug]: adapter_get_user"
    message = records[1].getMessage()
    assert message.startswith("[auth][debug]: CREATE_STATE {")
    assert json.loads(message.removeprefix("[auth][debug]: CREATE_STATE ")) == {
        "value": "abc",
        "maxAge": 900,
    }


# -- the debug option ---------------------------------------------------------------------


def test_debug_option_enables_debug_messages(webauth_log):
    config = build_config({"debug": True}, {}.get)
    assert f"[auth][warn][debug-enabled] Read more: {DOCS}debug-enabled" in (
        webauth_lines(webauth_log)
    )
    config.logger.debug("authorization url is ready", {"provider": "github"})
    assert webauth_lines(webauth_log)[-1].startswith("[auth][debug]: authorization url is ready")


def test_debug_option_off_suppresses_debug_messages(webauth_log):
    config = build_config({"debug": False}, {}.get)
    config.logger.debug("authorization url is ready")
    assert webauth_lines(webauth_log) == []


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD, first_name="Alice"
    )


def big_token(*, token, **kw):
    token["blob"] = "x" * 6000
    return token


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [True, False])
def test_debug_option_through_a_real_request(client, alice, settings, webauth_log, debug):
    settings.WEBAUTH = {**settings.WEBAUTH, "debug": debug, "callbacks": {"jwt": big_token}}
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "alice", "password": PASSWORD},
    )
    assert "authjs.session-token.1" in response.cookies  # chunked
    chunking = [line for line in webauth_lines(webauth_log) if "CHUNKING_SESSION_COOKIE" in line]
    assert bool(chunking) is debug
    assert any("debug-enabled" in line for line in webauth_lines(webauth_log)) is debug


@pytest.mark.django_db
def test_debug_logs_adapter_calls(client, alice, settings, webauth_log):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "debug": True,
        "adapter": "webauth.adapters.django.DjangoAdapter",
    }
    token = force_sign_in(client, alice)
    webauth_log.clear()
    assert client.get("/auth/session").json()["user"]["email"] == "alice@example.com"
    lines = webauth_lines(webauth_log)
    assert "[auth][debug]: adapter_get_session_and_user" in lines
    assert not any(token in line for line in lines)  # the session token is not logged


# -- the logger option --------------------------------------------------------------------


class Recorder:
    def __init__(self):
        self.calls = []

    def error(self, error):
        self.calls.append(("error", error))

    def warn(self, code):
        self.calls.append(("warn", code))

    def debug(self, message, metadata=None):
        self.calls.append(("debug", message, metadata))


RECORDER = Recorder()


def recorded_error(error):
    RECORDER.error(error)


def test_logger_option_overrides_each_level(webauth_log):
    rec = Recorder()
    config = build_config(
        {"logger": {"error": rec.error, "warn": rec.warn, "debug": rec.debug}}, {}.get
    )
    error = AccessDenied("no")
    config.logger.error(error)
    config.logger.warn("csrf-disabled")
    config.logger.debug("CREATE_STATE", {"value": 1})
    assert rec.calls == [
        ("error", error),
        ("warn", "csrf-disabled"),
        ("debug", "CREATE_STATE", {"value": 1}),
    ]
    assert webauth_lines(webauth_log) == []  # the built-in logger was not used


def test_custom_debug_is_called_even_without_the_debug_option():
    rec = Recorder()
    config = build_config({"logger": {"debug": rec.debug}}, {}.get)
    assert config.debug is False
    config.logger.debug("adapter_get_user")
    assert rec.calls == [("debug", "adapter_get_user", None)]


def test_undefined_levels_use_the_built_in_logger(webauth_log):
    rec = Recorder()
    config = build_config({"logger": {"error": rec.error}}, {}.get)
    config.logger.warn("debug-enabled")
    config.logger.error(AccessDenied("x"))
    assert [c[0] for c in rec.calls] == ["error"]
    assert webauth_lines(webauth_log) == [
        f"[auth][warn][debug-enabled] Read more: {DOCS}debug-enabled"
    ]


def test_logger_option_as_dotted_paths():
    RECORDER.calls.clear()
    config = build_config({"logger": {"error": "tests.test_logger.recorded_error"}}, {}.get)
    config.logger.error(AccessDenied("x"))
    assert RECORDER.calls[0][0] == "error"
    assert RECORDER.calls[0][1].type == "AccessDenied"


@pytest.mark.parametrize("level", ["error", "warn", "debug"])
def test_a_raising_custom_logger_is_contained(webauth_log, level):
    def broken(*args):
        raise RuntimeError("logger down")

    config = build_config({"logger": {level: broken}}, {}.get)
    getattr(config.logger, level)(AccessDenied("x") if level == "error" else "csrf-disabled")
    (record,) = webauth_log.records
    assert f"the custom {level} logger raised" in record.getMessage()
    assert record.exc_info and "logger down" in str(record.exc_info[1])


@pytest.mark.django_db
def test_logger_option_receives_errors_from_a_real_request(client, alice, settings):
    rec = Recorder()
    settings.WEBAUTH = {**settings.WEBAUTH, "logger": {"error": rec.error}}
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "alice", "password": WRONG_PASSWORD},
    )
    assert response["Location"].endswith("error=CredentialsSignin&code=credentials")
    (kind, error), *_ = rec.calls
    assert kind == "error" and isinstance(error, CredentialsSignin)


@pytest.mark.django_db
def test_logger_option_receives_warnings(client, settings):
    rec = Recorder()
    settings.WEBAUTH = {**settings.WEBAUTH, "skip_csrf_check": True, "logger": {"warn": rec.warn}}
    client.get("/auth/csrf")
    assert ("warn", "csrf-disabled") in rec.calls


# -- secrets never reach the log ---------------------------------------------------------------


@pytest.mark.django_db
def test_wrong_password_is_logged_without_the_password(client, alice, settings, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, every level
    settings.WEBAUTH = {**settings.WEBAUTH, "debug": True}
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "alice", "password": WRONG_PASSWORD},
    )
    assert response["Location"] == (
        "http://testserver/auth/signin?error=CredentialsSignin&code=credentials"
    )
    assert "[auth][warn][CredentialsSignin]" in caplog.text  # the failure is logged...
    assert WRONG_PASSWORD not in caplog.text  # ...without the password
    assert SECRET not in caplog.text


@pytest.mark.django_db
def test_successful_sign_in_and_session_read_log_no_secret(client, alice, settings, caplog):
    caplog.set_level(logging.DEBUG)
    settings.WEBAUTH = {**settings.WEBAUTH, "debug": True, "callbacks": {"jwt": big_token}}
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "alice", "password": PASSWORD},
    )
    assert response.status_code == 302
    jwt_chunk = response.cookies["authjs.session-token.0"].value
    client.get("/auth/session")
    assert "[auth][debug]: CHUNKING_SESSION_COOKIE" in caplog.text
    assert PASSWORD not in caplog.text
    assert SECRET not in caplog.text
    assert jwt_chunk not in caplog.text


@pytest.mark.django_db
def test_authorize_crash_logs_the_cause_but_not_the_credentials(client, settings, caplog):
    from webauth.providers import Credentials

    def authorize(credentials, request):
        raise ConnectionError("user directory unreachable")

    caplog.set_level(logging.DEBUG)
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [Credentials(id="pin", authorize=authorize)],
    }
    client.post("/auth/callback/pin", {"csrfToken": csrf_pair(client), "pin": "918273"})
    assert "[auth][error] CallbackRouteError" in caplog.text
    assert "[auth][cause]: Traceback" in caplog.text
    assert "user directory unreachable" in caplog.text
    assert '"provider": "pin"' in caplog.text  # [auth][details]
    assert "918273" not in caplog.text


@pytest.mark.django_db
def test_tampered_session_cookie_is_not_echoed_to_the_log(client, caplog):
    caplog.set_level(logging.DEBUG)
    forged = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2Q0JDLUhTNTEyIn0..forged-iv.forged-body.forged-tag"
    client.cookies["authjs.session-token"] = forged
    assert client.get("/auth/session").content == b"null"
    # A stale or forged cookie is the visitor's, not the server's: a warning line.
    assert "[auth][warn][JWTSessionError] Invalid JWT." in caplog.text
    assert "[auth][error]" not in caplog.text
    assert "forged-body" not in caplog.text


def test_bad_secret_type_error_does_not_echo_the_value():
    with pytest.raises(ImproperlyConfigured) as info:
        build_config({"secret": {"value": "super-secret-value"}}, {}.get)
    assert "super-secret-value" not in str(info.value)


# -- log injection: client-sent text never forges a line ---------------------------------
#
# Everything a client (or a provider) sends that reaches the log is escaped by the
# logger and by the errors' own text: a newline, a carriage return, an ANSI escape or
# any other unprintable character shows as a backslash escape, and one message is one
# line. Each test below feeds such text through one channel.

FORGED = "\r\n[auth][error] Forged: admin signed in\x1b[2J\x1b[31m\u2028\x85"
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def assert_one_error_line(caplog, *, containing):
    """Exactly one ``[auth][error]`` or ``[auth][warn]`` line in the log (an error the
    visitor caused is a warning), itself free of control characters."""
    # caplog.text starts each record with "LEVEL logger:file:line "; a forged line would not.
    starts = re.compile(r"^(?:[A-Z]+ +webauth:\S+:\d+ )?\[auth\]\[(?:error|warn)\]")
    lines = [line for line in caplog.text.splitlines() if starts.match(line)]
    assert len(lines) == 1, caplog.text
    (record,) = [
        r for r in caplog.records if r.getMessage().startswith(("[auth][error]", "[auth][warn]"))
    ]
    message = record.getMessage()
    assert "\n" not in message and not CONTROL.search(message), repr(message)
    assert containing in message, message
    return message


def plain_oauth():
    from webauth.providers.oauth import OAuth2

    return OAuth2(
        id="plain",
        client_id="client",
        client_secret="secret",
        authorization_endpoint="https://provider.example/authorize",
        token_endpoint="https://provider.example/token",
        userinfo_endpoint="https://provider.example/userinfo",
    )


def oauth_state(client):
    location = client.post("/auth/signin/plain", {"csrfToken": csrf_pair(client)})["Location"]
    return parse_qs(urlsplit(location).query)["state"][0]


@pytest.mark.django_db
def test_provider_error_description_cannot_forge_a_log_line(client, settings, caplog):
    settings.WEBAUTH = {**settings.WEBAUTH, "providers": [plain_oauth()]}
    state = oauth_state(client)
    caplog.set_level(logging.DEBUG)
    response = client.get(
        "/auth/callback/plain?"
        + urlencode({"state": state, "error": "access_denied", "error_description": FORGED})
    )
    assert response["Location"] == "http://testserver/auth/signin?error=OAuthCallbackError"
    # The person said no: a warning.
    message = assert_one_error_line(caplog, containing="[OAuthCallbackError] access_denied: ")
    assert r"\r\n[auth][error] Forged: admin signed in\x1b[2J\x1b[31m\u2028\x85" in message


@pytest.mark.django_db
def test_provider_error_code_cannot_forge_a_log_line(client, settings, caplog):
    settings.WEBAUTH = {**settings.WEBAUTH, "providers": [plain_oauth()]}
    state = oauth_state(client)
    caplog.set_level(logging.DEBUG)
    client.get("/auth/callback/plain?" + urlencode({"state": state, "error": "x" + FORGED}))
    assert_one_error_line(caplog, containing=r"OAuthCallbackError: x\r\n[auth][error] Forged")


@pytest.mark.django_db
@pytest.mark.parametrize("route", ["signin", "callback"])
def test_unknown_provider_id_cannot_forge_a_log_line(client, caplog, route):
    token = csrf_pair(client)
    caplog.set_level(logging.DEBUG)
    client.post(f"/auth/{route}/{quote(FORGED, safe='')}", {"csrfToken": token})
    assert_one_error_line(caplog, containing="[auth][warn][InvalidProvider] Unknown provider")


@pytest.mark.django_db
@pytest.mark.parametrize("channel", ["query", "cookie"])
def test_bad_callback_url_cannot_forge_a_log_line(client, caplog, channel):
    # An unusable client-sent callbackUrl is not an error (it becomes the origin):
    # nothing of it may reach the log as a line of its own.
    caplog.set_level(logging.DEBUG)
    value = "javascript:alert(1)" + FORGED
    if channel == "cookie":
        client.cookies["authjs.callback-url"] = quote(value, safe="")
        response = client.get("/auth/session")
    else:
        response = client.get("/auth/session?" + urlencode({"callbackUrl": value}))
    assert response.status_code == 200
    assert "Forged" not in caplog.text
    assert not [r for r in caplog.records if r.getMessage().startswith("[auth][error]")]


@pytest.mark.django_db
def test_a_redirect_callback_answer_cannot_forge_a_log_line(client, settings, caplog):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "callbacks": {"redirect": lambda url, base_url: "javascript:alert(1)" + FORGED},
    }
    caplog.set_level(logging.DEBUG)
    client.get("/auth/signin")
    assert_one_error_line(caplog, containing="InvalidCallbackUrl: The redirect callback returned")


@pytest.mark.django_db
def test_exception_text_in_the_cause_cannot_forge_a_line(client, settings, caplog):
    from webauth.providers import Credentials

    def authorize(credentials, request):
        # A project's authorize that puts the submitted name into its exception.
        raise LookupError(f"no user named {credentials['username']}")

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [Credentials(id="pin", authorize=authorize)],
    }
    token = csrf_pair(client)
    caplog.set_level(logging.DEBUG)
    client.post("/auth/callback/pin", {"csrfToken": token, "username": FORGED})
    assert_one_error_line(caplog, containing="CallbackRouteError")
    (cause,) = [r.getMessage() for r in caplog.records if "[auth][cause]" in r.getMessage()]
    assert cause.startswith("[auth][cause]: Traceback (most recent call last):")
    assert not CONTROL.search(cause.replace("\n", ""))
    last = cause.splitlines()[-1]
    assert last.startswith(r"LookupError: no user named \r\n[auth][error] Forged"), last


def test_auth_error_text_is_one_escaped_line():
    error = errors.OAuthCallbackError("denied" + FORGED)
    assert error.message == "denied" + FORGED  # the attribute keeps what was raised
    text = str(error)
    assert "\n" not in text and not CONTROL.search(text)
    assert text.startswith(r"denied\r\n[auth][error] Forged: admin signed in\x1b[2J")
    assert text.endswith(f"Read more at {DOCS}oauthcallbackerror")


def test_non_auth_error_text_is_escaped(webauth_log):
    AuthLogger().error(ValueError("bad" + FORGED))
    assert_one_error_line(webauth_log, containing=r"ValueError: bad\r\n[auth][error]")


def test_chained_and_noted_exception_messages_are_escaped(webauth_log):
    try:
        try:
            raise KeyError("inner" + FORGED)
        except KeyError as inner:
            outer = ConnectionError("outer" + FORGED)
            outer.add_note("note" + FORGED)
            raise outer from inner
    except ConnectionError as exc:
        caught = exc
    AuthLogger().error(errors.AdapterError("adapter_get_user failed", cause={"err": caught}))
    (cause,) = [r.getMessage() for r in webauth_log.records if "[auth][cause]" in r.getMessage()]
    lines = cause.splitlines()
    assert "The above exception was the direct cause of the following exception:" in lines
    assert any(line.startswith(r"KeyError: 'inner\r\n[auth][error] Forged") for line in lines)
    assert any(line.startswith(r"ConnectionError: outer\r\n[auth][error]") for line in lines)
    assert any(line.startswith(r"note\r\n[auth][error] Forged") for line in lines)
    assert not any(line.startswith("[auth][error]") for line in lines)
    assert not CONTROL.search(cause.replace("\n", ""))


def test_debug_message_and_warn_code_are_escaped(webauth_log):
    auth_logger = AuthLogger(debug_enabled=True)
    auth_logger.debug("step" + FORGED, {"value": "v" + FORGED})
    auth_logger.warn("code" + FORGED)
    debug, warn = (r.getMessage() for r in webauth_log.records)
    assert debug.startswith(r"[auth][debug]: step\r\n[auth][error] Forged: admin signed in")
    # The metadata is JSON, whose strings escape control characters themselves.
    assert json.loads(debug[debug.index(" {") :]) == {"value": "v" + FORGED}
    assert not CONTROL.search(debug.replace("\n", ""))
    assert not any(line.startswith("[auth][error]") for line in debug.splitlines())
    assert warn.startswith(r"[auth][warn][code\r\n[auth][error] Forged")
    assert "\n" not in warn and not CONTROL.search(warn)


def test_a_raising_custom_logger_does_not_echo_raw_text(caplog):
    def broken(error):
        raise RuntimeError("could not log " + error.message)

    caplog.set_level(logging.DEBUG)
    config = build_config({"logger": {"error": broken}}, {}.get)
    config.logger.error(errors.OAuthCallbackError("denied" + FORGED))
    assert not any(line.startswith("[auth][error]") for line in caplog.text.splitlines())
    assert r"RuntimeError: could not log denied\r\n[auth][error] Forged" in caplog.text


def test_long_client_text_is_cut(webauth_log):
    AuthLogger().error(errors.OAuthCallbackError("y" * 100_000))
    (record,) = webauth_log.records
    message = record.getMessage()
    assert len(message) < 2_200
    assert "[98000 more characters]" in message
    assert message.endswith(f"Read more at {DOCS}oauthcallbackerror")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain text, unchanged: é ü 日本 \\n", "plain text, unchanged: é ü 日本 \\n"),
        ("a\nb\rc\td", r"a\nb\rc\td"),
        ("\x1b[31mred\x1b[0m", r"\x1b[31mred\x1b[0m"),
        ("\x00\x7f\x9b", r"\x00\x7f\x9b"),
        ("\u2028\u2029\u202e\ufeff", r"\u2028\u2029\u202e\ufeff"),
        ("\ud800", r"\ud800"),
        ("\U000e0041", r"\U000e0041"),
    ],
)
def test_log_safe(raw, shown):
    from webauth.logger import log_safe

    assert log_safe(raw) == shown


def test_no_module_but_the_logger_writes_to_a_python_logger():
    # The escaping lives in webauth.logger: a module that logged by itself could
    # forget it. Flows, routes and adapters log through config.logger.
    package = Path(webauth.__file__).parent
    uses_logging = re.compile(r"^\s*(import|from) logging\b", re.M)
    offenders = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "logger.py" and uses_logging.search(path.read_text())
    ]
    assert offenders == []


def test_long_details_are_cut(webauth_log):
    AuthLogger().error(errors.AdapterError("x", cause={"err": ValueError(), "v": "z" * 50_000}))
    details = webauth_lines(webauth_log)[-1]
    assert details.startswith("[auth][details]: {") and len(details) < 16_200
    assert details.endswith("more characters]")


def test_a_child_logger_renders_tracebacks_safely(caplog):
    from webauth.logger import get_logger

    child = get_logger("ratelimit")
    caplog.set_level(logging.DEBUG, logger="webauth.ratelimit")
    try:
        raise ValueError("cache said" + FORGED)
    except ValueError:
        child.exception("webauth: rate limit could not be counted")
    (record,) = caplog.records
    assert record.exc_text is not None and "cache said\\r\\n[auth][error]" in record.exc_text
    assert not any(line.startswith("[auth][error]") for line in caplog.text.splitlines())
