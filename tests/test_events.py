"""Events (spec 6, protocol 9.6): configured handlers and Django signals; callbacks' runners.

tests/test_flows_credentials.py covers a sync ``sign_in`` handler and receiver, a failing
``sign_in`` handler and the ``session`` event; this file covers the rest.
"""

import asyncio
import logging

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.http import HttpRequest

from webauth import signals
from webauth.callbacks import (
    default_redirect,
    run_jwt,
    run_redirect,
    run_session,
    run_sign_in,
)
from webauth.conf import build_config
from webauth.errors import EventError, InvalidCallbackUrl
from webauth.events import emit
from webauth.providers.oauth import OIDC
from webauth.test import force_sign_in
from webauth.types import AdapterSession

from .support.helpers import csrf_pair
from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse"


class Recorder:
    """An error logger that keeps what it is given."""

    def __init__(self):
        self.errors = []

    def __call__(self, error):
        self.errors.append(error)


def config_with(**raw):
    return build_config({"secret": SECRET, **raw}, {}.get)


@pytest.fixture
def connect():
    """Connect receivers to signals for the test only."""
    connected = []

    def _connect(signal, receiver):
        signal.connect(receiver, weak=False)
        connected.append((signal, receiver))

    yield _connect
    for signal, receiver in connected:
        signal.disconnect(receiver)


# -- emit ---------------------------------------------------------------------------------


def test_event_names_map_to_signals():
    assert {
        "sign_in": signals.signed_in,
        "sign_out": signals.signed_out,
        "create_user": signals.user_created,
        "update_user": signals.user_updated,
        "link_account": signals.account_linked,
        "session": signals.session_read,
        # webauth's own: the second factor (docs/mfa.md)
        "second_factor": signals.second_factor,
        "signup": signals.signup,
        "password_reset_requested": signals.password_reset_requested,
        "password_changed": signals.password_changed,
        # and access tokens (docs/tokens.md)
        "access_token": signals.access_token_minted,
        # and API keys (docs/api-keys.md)
        "api_key": signals.api_key_changed,
    } == signals.EVENT_SIGNALS


@pytest.mark.parametrize("name", sorted(signals.EVENT_SIGNALS))
def test_emit_reaches_the_handler_and_the_signal(name, connect):
    handled, received = [], []
    config = config_with(events={name: lambda **m: handled.append(m)})
    connect(signals.EVENT_SIGNALS[name], lambda sender, **kw: received.append((sender, kw)))
    request = HttpRequest()
    emit(config, name, sender="prov", request=request, user={"id": "1"})
    assert handled == [{"user": {"id": "1"}}]  # handlers never see the request
    assert len(received) == 1
    sender, kwargs = received[0]
    assert sender == "prov"
    assert kwargs["user"] == {"id": "1"} and kwargs["request"] is request
    assert kwargs["signal"] is signals.EVENT_SIGNALS[name]


def test_emit_without_handler_or_receiver_is_a_no_op():
    errors = Recorder()
    emit(config_with(logger={"error": errors}), "sign_in", user=None, account=None)
    assert errors.errors == []


def test_emit_runs_async_handlers_and_receivers(connect):
    handled, received = [], []

    async def handler(**message):
        await asyncio.sleep(0)
        handled.append(message)

    async def receiver(sender, **kwargs):
        await asyncio.sleep(0)
        received.append(kwargs["token"])

    connect(signals.signed_out, receiver)
    emit(config_with(events={"sign_out": handler}), "sign_out", token={"sub": "1"})
    assert handled == [{"token": {"sub": "1"}}]
    assert received == [{"sub": "1"}]


def test_emit_logs_a_raising_handler_as_event_error():
    errors = Recorder()
    failure = RuntimeError("audit log down")

    def handler(**message):
        raise failure

    config = config_with(events={"create_user": handler}, logger={"error": errors})
    emit(config, "create_user", user={"id": "1"})  # does not raise
    (error,) = errors.errors
    assert isinstance(error, EventError) and error.type == "EventError"
    assert error.cause == {"err": failure}
    assert "'create_user'" in error.message


def test_emit_logs_a_raising_async_handler():
    errors = Recorder()

    async def handler(**message):
        raise ValueError("async audit down")

    config = config_with(events={"update_user": handler}, logger={"error": errors})
    emit(config, "update_user", user={"id": "1"})
    (error,) = errors.errors
    assert isinstance(error, EventError)
    assert str(error.cause["err"]) == "async audit down"


def test_a_raising_receiver_does_not_stop_the_others_or_the_handler(connect):
    errors, calls = Recorder(), []

    def bad(sender, **kwargs):
        raise RuntimeError("receiver down")

    connect(signals.account_linked, bad)
    connect(signals.account_linked, lambda sender, **kw: calls.append("receiver"))
    config = config_with(
        events={"link_account": lambda **m: calls.append("handler")}, logger={"error": errors}
    )
    emit(config, "link_account", user={}, account={}, profile={})
    assert calls == ["receiver", "handler"]
    (error,) = errors.errors
    assert isinstance(error, EventError)
    assert "'link_account'" in error.message
    assert str(error.cause["err"]) == "receiver down"


def test_emit_default_logger_format(caplog, connect):
    caplog.set_level(logging.ERROR, logger="webauth")

    def bad(sender, **kwargs):
        raise RuntimeError("receiver down")

    connect(signals.session_read, bad)
    emit(config_with(), "session", session={}, token={})
    assert "[auth][error] EventError: receiver " in caplog.text
    assert "[auth][cause]: " in caplog.text and "RuntimeError: receiver down" in caplog.text


# -- callbacks' runners ---------------------------------------------------------------------


def test_default_callbacks():
    config = config_with()
    token = {"sub": "1"}
    session = {"user": {}, "expires": "x"}
    assert run_jwt(config, token=token, trigger="signIn") is token
    assert run_session(config, session=session, token=token) is session
    assert run_sign_in(config, user={}, account={}) is True
    assert run_redirect(config, url="/x", base_url="https://a.example") == "https://a.example/x"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/dashboard", "https://a.example/dashboard"),
        ("https://a.example/ok", "https://a.example/ok"),
        ("HTTPS://A.EXAMPLE/ok", "HTTPS://A.EXAMPLE/ok"),
        ("https://evil.example/", "https://a.example"),
        ("https://a.example.evil.example/", "https://a.example"),
        ("http://a.example/", "https://a.example"),
    ],
)
def test_default_redirect(url, expected):
    assert default_redirect(url=url, base_url="https://a.example") == expected


@pytest.mark.parametrize("url", ["javascript:alert(1)", "not a url", "mailto:a@b.example"])
def test_default_redirect_rejects_unusable_urls(url):
    with pytest.raises(InvalidCallbackUrl):
        default_redirect(url=url, base_url="https://a.example")


def test_redirect_callback_must_return_a_string():
    config = config_with(callbacks={"redirect": lambda **kw: None})
    with pytest.raises(InvalidCallbackUrl, match="must return a string"):
        run_redirect(config, url="/x", base_url="https://a.example")


@pytest.mark.parametrize(
    ("returned", "expected"),
    [(True, True), (False, False), (None, False), (1, True), ("", ""), ("/welcome", "/welcome")],
)
def test_sign_in_callback_results(returned, expected):
    config = config_with(callbacks={"sign_in": lambda **kw: returned})
    assert run_sign_in(config, user={}, account={}) == expected


def test_async_callbacks_are_awaited():
    async def jwt(*, token, **kw):
        await asyncio.sleep(0)
        return {**token, "role": "admin"}

    async def session(*, session, token, **kw):
        return {**session, "role": token["role"]}

    async def sign_in(**kw):
        return "/from-async"

    async def redirect(*, url, base_url):
        return base_url + "/async"

    config = config_with(
        callbacks={"jwt": jwt, "session": session, "sign_in": sign_in, "redirect": redirect}
    )
    token = run_jwt(config, token={"sub": "1"})
    assert token == {"sub": "1", "role": "admin"}
    assert run_session(config, session={"user": {}}, token=token) == {"user": {}, "role": "admin"}
    assert run_sign_in(config, user={}) == "/from-async"
    assert run_redirect(config, url="/x", base_url="https://a.example") == "https://a.example/async"


def test_callbacks_receive_keyword_arguments():
    seen = {}

    def jwt(**kw):
        seen.update(kw)
        return kw["token"]

    run_jwt(config_with(callbacks={"jwt": jwt}), token={}, user="u", trigger="signUp")
    assert seen == {"token": {}, "user": "u", "trigger": "signUp"}


# -- events through real requests -------------------------------------------------------------


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD, first_name="Alice"
    )


def sign_in_with_password(client, password=PASSWORD):
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "alice", "password": password},
    )


def sign_out(client):
    return client.post("/auth/signout", {"csrfToken": csrf_pair(client), "callbackUrl": "/bye"})


@pytest.mark.django_db
def test_credentials_sign_in_payload(client, alice, settings, connect):
    handled, received = [], []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_in": lambda **m: handled.append(m)}}
    connect(signals.signed_in, lambda sender, **kw: received.append((sender, kw)))
    response = sign_in_with_password(client)
    assert response.status_code == 302 and "authjs.session-token" in response.cookies
    account = {"providerAccountId": str(alice.pk), "type": "credentials", "provider": "credentials"}
    # protocol 9.6: credentials -> {user, account}; the user is authorize()'s result
    assert handled == [{"user": alice, "account": account}]
    ((sender, kwargs),) = received
    assert sender == "credentials"
    assert set(kwargs) == {"signal", "user", "account", "request"}
    assert kwargs["user"] == alice and kwargs["account"] == account
    assert kwargs["request"].path == "/auth/callback/credentials"


@pytest.mark.django_db
def test_failed_sign_in_sends_no_sign_in_event(client, alice, settings, connect):
    handled, received = [], []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_in": lambda **m: handled.append(m)}}
    connect(signals.signed_in, lambda sender, **kw: received.append(kw))
    response = sign_in_with_password(client, password="wrong")
    assert "error=CredentialsSignin" in response["Location"]
    assert handled == [] and received == []


@pytest.mark.django_db
def test_async_sign_in_handler_and_receiver(client, alice, settings, connect):
    handled, received = [], []

    async def handler(**message):
        await asyncio.sleep(0)
        handled.append(message["user"])

    async def receiver(sender, **kwargs):
        await asyncio.sleep(0)
        received.append((sender, kwargs["user"]))

    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_in": handler}}
    connect(signals.signed_in, receiver)
    response = sign_in_with_password(client)
    assert "authjs.session-token" in response.cookies
    assert handled == [alice]
    assert received == [("credentials", alice)]


@pytest.mark.django_db
def test_sign_in_event_as_dotted_path(client, alice, settings):
    SEEN.clear()
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "events": {"sign_in": "tests.test_events.record_sign_in"},
    }
    sign_in_with_password(client)
    assert [alice] == SEEN


SEEN: list = []


def record_sign_in(**message):
    SEEN.append(message["user"])


@pytest.mark.django_db
def test_jwt_sign_out_payload(client, alice, settings, connect):
    handled, received = [], []

    async def handler(**message):
        handled.append(message)

    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_out": handler}}
    connect(signals.signed_out, lambda sender, **kw: received.append((sender, kw)))
    force_sign_in(client, alice)
    response = sign_out(client)
    assert response["Location"] == "http://testserver/bye"
    assert response.cookies["authjs.session-token"]["max-age"] == "0"
    # protocol 9.6: {token} with the jwt strategy
    ((message,),) = [tuple(handled)]
    assert set(message) == {"token"}
    assert message["token"]["sub"] == str(alice.pk)
    assert message["token"]["email"] == "alice@example.com"
    ((sender, kwargs),) = received
    assert sender is None
    assert set(kwargs) == {"signal", "token", "request"}
    assert kwargs["token"] == message["token"]
    assert kwargs["request"].path == "/auth/signout"


@pytest.mark.django_db
def test_jwt_sign_out_with_an_undecodable_token_sends_none(client, settings):
    handled = []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_out": lambda **m: handled.append(m)}}
    client.cookies["authjs.session-token"] = "garbage"
    response = sign_out(client)
    assert response.cookies["authjs.session-token"]["max-age"] == "0"
    assert handled == [{"token": None}]


@pytest.mark.django_db
def test_sign_out_without_session_sends_no_event(client, settings, connect):
    handled, received = [], []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_out": lambda **m: handled.append(m)}}
    connect(signals.signed_out, lambda sender, **kw: received.append(kw))
    sign_out(client)
    assert handled == [] and received == []


@pytest.mark.django_db
def test_database_sign_out_signal_gets_the_deleted_session(client, alice, settings, connect):
    received = []
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": "webauth.adapters.django.DjangoAdapter"}
    connect(signals.signed_out, lambda sender, **kw: received.append(kw))
    token = force_sign_in(client, alice)
    response = sign_out(client)
    assert response.cookies["authjs.session-token"]["max-age"] == "0"
    ((kwargs),) = received
    assert set(kwargs) == {"signal", "session", "request"}
    assert isinstance(kwargs["session"], AdapterSession)
    assert kwargs["session"].session_token == token
    assert kwargs["session"].user_id == str(alice.pk)


@pytest.mark.django_db
def test_raising_sign_out_handler_and_receiver_never_break_sign_out(
    client, alice, settings, caplog, connect
):
    caplog.set_level(logging.ERROR, logger="webauth")

    async def handler(**message):
        raise RuntimeError("audit log down")

    def receiver(sender, **kwargs):
        raise RuntimeError("receiver down")

    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_out": handler}}
    connect(signals.signed_out, receiver)
    force_sign_in(client, alice)
    response = sign_out(client)
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/bye"
    assert response.cookies["authjs.session-token"]["max-age"] == "0"
    assert client.get("/auth/session").content == b"null"
    assert caplog.text.count("[auth][error] EventError") == 2
    assert "audit log down" in caplog.text and "receiver down" in caplog.text
    assert "SignOutError" not in caplog.text  # the event failure is not a sign-out failure


@pytest.mark.django_db
def test_raising_async_sign_in_handler_never_breaks_sign_in(client, alice, settings, caplog):
    caplog.set_level(logging.ERROR, logger="webauth")

    async def handler(**message):
        raise RuntimeError("async audit down")

    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_in": handler}}
    response = sign_in_with_password(client)
    assert response["Location"] == "http://testserver"
    assert "authjs.session-token" in response.cookies
    assert "[auth][error] EventError: event handler 'sign_in' raised" in caplog.text
    assert "async audit down" in caplog.text


@pytest.mark.django_db
def test_session_signal_payloads(client, alice, settings, connect):
    received = []
    connect(signals.session_read, lambda sender, **kw: received.append(kw))
    force_sign_in(client, alice)
    client.get("/auth/session")
    ((kwargs),) = received
    assert set(kwargs) == {"signal", "session", "token", "request"}
    assert kwargs["session"]["user"]["email"] == "alice@example.com"
    assert kwargs["token"]["sub"] == str(alice.pk)


@pytest.mark.django_db
def test_database_session_event_has_no_token(client, alice, settings, connect):
    handled = []
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "events": {"session": lambda **m: handled.append(m)},
    }
    force_sign_in(client, alice)
    client.get("/auth/session")
    ((message),) = handled
    assert set(message) == {"session"}  # protocol 9.6: database -> {session}
    assert message["session"]["user"]["email"] == "alice@example.com"


@pytest.mark.django_db
def test_no_session_no_session_event(client, settings):
    handled = []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"session": lambda **m: handled.append(m)}}
    assert client.get("/auth/session").content == b"null"
    assert handled == []


# -- OAuth events through signals --------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_oauth_first_sign_in_signals(client, live_server, settings, connect):
    from .support.oidc_helpers import sign_in, start_idp

    cache.clear()
    idp = start_idp(live_server)
    provider = OIDC(
        id="example",
        issuer=idp.issuer,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        checks=("pkce", "nonce"),
    )
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [provider],
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
    }
    received = []
    for name in ("user_created", "account_linked", "signed_in"):
        connect(
            getattr(signals, name),
            (lambda name: lambda sender, **kw: received.append((name, sender, kw)))(name),
        )
    response = sign_in(client, idp)
    assert response.status_code == 302 and "authjs.session-token" in response.cookies
    assert [name for name, _, _ in received] == ["user_created", "account_linked", "signed_in"]
    by_name = {name: (sender, kw) for name, sender, kw in received}

    sender, kw = by_name["user_created"]
    assert sender == "example"
    assert set(kw) == {"signal", "user", "request"}
    assert kw["user"].email == "ida@idp.example"

    sender, kw = by_name["account_linked"]
    assert sender == "example"
    assert set(kw) == {"signal", "user", "account", "profile", "request"}
    assert kw["account"].provider == "example"
    assert kw["account"].user_id == kw["user"].id
    assert kw["profile"]["email"] == "ida@idp.example"

    sender, kw = by_name["signed_in"]
    assert sender == "example"
    assert set(kw) == {"signal", "user", "account", "profile", "is_new_user", "request"}
    assert kw["is_new_user"] is True
    assert kw["request"].path == "/auth/callback/example"
