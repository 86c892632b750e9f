"""The database session strategy end to end through the routes and the middleware."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from freezegun import freeze_time

from webauth.errors import MissingAdapterMethods
from webauth.models import Session, token_hash
from webauth.test import force_sign_in
from webauth.testing.memory import MemoryAdapter

from .support.helpers import csrf_pair

pytestmark = pytest.mark.django_db
COOKIE = "authjs.session-token"
DAY = 86_400
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def db_strategy(settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": "webauth.adapters.django.DjangoAdapter"}


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="pw-alice-123", first_name="Alice"
    )


def sign_in(client, username="alice", password="pw-alice-123", **headers):
    token = csrf_pair(client)
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": username, "password": password},
        headers=headers,
    )


def test_adapter_makes_database_the_default_strategy(db_strategy):
    from webauth.conf import get_config

    assert get_config().session.strategy == "database"


def test_credentials_sign_in_creates_a_database_session(client, alice, db_strategy):
    response = sign_in(client, **{"User-Agent": "TestBrowser/1.0"})
    assert response.status_code == 302 and "error" not in response["Location"]
    token = response.cookies[COOKIE].value
    assert token.count(".") == 0  # an opaque token, not a JWT
    row = Session.objects.get()
    assert row.user == alice and row.token_hash == token_hash(token)
    assert row.user_agent == "TestBrowser/1.0" and row.ip_address == "127.0.0.1"
    assert abs((row.expires - datetime.now(UTC)).total_seconds() - 30 * DAY) < 5


def test_sign_in_replaces_the_previous_session(client, alice, db_strategy):
    sign_in(client)
    first = Session.objects.get()
    sign_in(client)
    assert list(Session.objects.values_list("pk", flat=True)) != [first.pk]
    assert Session.objects.count() == 1


def test_session_route_returns_the_session_and_reissues_the_cookie(client, alice, db_strategy):
    with freeze_time(T0):
        sign_in(client)
    row = Session.objects.get()
    with freeze_time(T0 + timedelta(hours=1)):
        response = client.get("/auth/session")
    body = response.json()
    assert body["user"] == {"name": "Alice", "email": "alice@example.com", "image": None}
    assert body["expires"] == "2030-01-31T12:00:00.000Z"  # the stored expiry
    assert response.cookies[COOKIE].value == client.cookies[COOKIE].value
    assert response.cookies[COOKIE]["expires"] == "Thu, 31 Jan 2030 13:00:00 GMT"
    row.refresh_from_db()
    assert row.expires == T0 + timedelta(days=30)  # not extended within update_age


def test_expiry_is_extended_at_most_once_per_update_age(client, alice, db_strategy):
    with freeze_time(T0):
        sign_in(client)
    row = Session.objects.get()
    with freeze_time(T0 + timedelta(days=1, seconds=1)):
        client.get("/auth/session")
    row.refresh_from_db()
    assert row.expires == T0 + timedelta(days=31, seconds=1)
    assert row.updated_at == T0 + timedelta(days=1, seconds=1)
    with freeze_time(T0 + timedelta(days=1, hours=5)):
        client.get("/auth/session")
    row.refresh_from_db()
    assert row.expires == T0 + timedelta(days=31, seconds=1)


def test_expired_session_is_deleted_on_access(client, alice, db_strategy):
    with freeze_time(T0):
        sign_in(client)
    with freeze_time(T0 + timedelta(days=30, seconds=1)):
        response = client.get("/auth/session")
    assert response.json() is None
    assert response.cookies[COOKIE]["max-age"] == "0"
    assert not Session.objects.exists()


def test_unknown_token_is_null_and_clears_cookie(client, db_strategy):
    client.cookies[COOKIE] = "no-such-session"
    response = client.get("/auth/session")
    assert response.json() is None and response.cookies[COOKIE]["max-age"] == "0"


def test_signout_deletes_the_row_and_sends_the_session_to_the_event(client, alice, settings):
    events = []
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "events": {"sign_out": lambda **m: events.append(m)},
    }
    sign_in(client)
    token = client.cookies[COOKIE].value
    response = client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
    assert response.status_code == 302
    assert not Session.objects.exists()
    assert events[0]["session"].session_token == token
    assert events[0]["session"].user_id == str(alice.pk)


def test_request_user_costs_exactly_one_query(
    client, alice, db_strategy, django_assert_num_queries
):
    with freeze_time(T0):
        force_sign_in(client, alice)
    with freeze_time(T0 + timedelta(hours=2)), django_assert_num_queries(1):
        response = client.get("/whoami/")
    assert response.json()["username"] == "alice"
    assert COOKIE not in response.cookies  # nothing to refresh


def test_request_after_update_age_writes_once_and_refreshes_cookie(
    client, alice, db_strategy, django_assert_num_queries
):
    with freeze_time(T0):
        force_sign_in(client, alice)
    with freeze_time(T0 + timedelta(days=2)), django_assert_num_queries(2):
        response = client.get("/whoami/")
    assert response.json()["username"] == "alice"
    assert response.cookies[COOKIE]["expires"] == "Sat, 02 Feb 2030 12:00:00 GMT"


def test_inactive_user_of_a_database_session_is_anonymous(client, alice, db_strategy):
    force_sign_in(client, alice)
    alice.is_active = False
    alice.save()
    assert client.get("/whoami/").json()["authenticated"] is False


def test_update_route_passes_data_to_the_session_callback(client, alice, settings):
    seen = {}

    def session_cb(**kw):
        seen.update(kw)
        return {**kw["session"], "extra": kw.get("new_session")}

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "callbacks": {"session": session_cb},
    }
    sign_in(client)
    response = client.post(
        "/auth/session",
        {"csrfToken": csrf_pair(client), "data": "hello"},
        content_type="application/json",
    )
    assert response.json()["extra"] == "hello"
    assert seen["trigger"] == "update" and seen["user"].email == "alice@example.com"


def test_jwt_strategy_with_adapter_reads_the_user_through_the_adapter(client, alice, settings):
    calls = []

    class CountingAdapter(MemoryAdapter):
        async def get_user(self, id):
            calls.append(id)
            from webauth.types import AdapterUser

            return AdapterUser(id=id, email="alice@example.com")

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": CountingAdapter(),
        "session": {"strategy": "jwt"},
    }
    force_sign_in(client, alice)
    assert client.get("/whoami/").json()["username"] == "alice"
    assert calls == [str(alice.pk)]


def test_async_adapter_end_to_end(client, alice, settings):
    adapter = MemoryAdapter(first_id=alice.pk)
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": adapter}
    from asgiref.sync import async_to_sync

    from webauth.types import AdapterUser

    async_to_sync(adapter.create_user)(AdapterUser(id="", email="alice@example.com", name="Al"))
    response = sign_in(client)
    assert "error" not in response["Location"]
    assert len(adapter.sessions) == 1
    session = client.get("/auth/session").json()
    assert session["user"]["name"] == "Al"
    assert client.get("/whoami/").json()["username"] == "alice"
    client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
    assert adapter.sessions == {}


class NoSessions:
    """An adapter that can read users but not store sessions."""

    def get_user(self, id):
        return None


def test_missing_adapter_methods_is_the_configuration_error(client, alice, settings, caplog):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": NoSessions(),
        "session": {"strategy": "database"},
    }
    response = sign_in(client)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert "MissingAdapterMethods" in caplog.text and "create_session" in caplog.text


def test_missing_adapter_methods_system_check(settings):
    from webauth.checks import check_config

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": NoSessions(),
        "session": {"strategy": "database"},
    }
    errors = [m for m in check_config() if m.id == "webauth.E008"]
    assert errors and "create_session" in errors[0].msg and "get_session_and_user" in errors[0].msg


def test_missing_adapter_methods_error_names_methods():
    from webauth.adapters.storage import Storage
    from webauth.logger import AuthLogger

    with pytest.raises(MissingAdapterMethods, match="use_verification_token"):
        Storage(NoSessions(), AuthLogger()).use_verification_token("a", "b")


def test_oauth_provider_with_an_adapter_lacking_oauth_methods_is_a_system_check(settings):
    from webauth.checks import check_config
    from webauth.providers.oauth import OIDC

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": NoSessions(),
        "session": {"strategy": "jwt"},
        "providers": [
            OIDC(id="corp", issuer="https://sso.example", client_id="c", client_secret="s")
        ],
    }
    errors = [m for m in check_config() if m.id == "webauth.E008"]
    assert len(errors) == 1 and "OAuth sign-in" in errors[0].msg
    assert "get_user_by_account" in errors[0].msg and "link_account" in errors[0].msg


def test_deactivated_user_loses_the_database_session(client, alice, db_strategy):
    force_sign_in(client, alice)
    assert client.get("/auth/session").json() is not None
    alice.is_active = False
    alice.save()
    response = client.get("/auth/session")
    assert response.json() is None and response.cookies[COOKIE]["max-age"] == "0"
    assert not Session.objects.exists()


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_django_logout_ends_the_webauth_session(client, alice, settings, strategy):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": strategy},
    }
    alice.is_staff = True
    alice.save()
    force_sign_in(client, alice)
    assert client.get("/whoami/").json()["authenticated"] is True
    response = client.post("/admin/logout/")
    assert response.status_code == 200
    assert response.cookies[COOKIE]["max-age"] == "0"
    assert not Session.objects.exists()
    assert client.get("/whoami/").json()["authenticated"] is False


@pytest.mark.django_db(transaction=True)
def test_async_view_reads_a_database_session_through_auser(async_client, alice, db_strategy):
    from asgiref.sync import async_to_sync

    force_sign_in(async_client, alice)
    response = async_to_sync(async_client.get)("/whoami-async/")
    assert response.json() == {"authenticated": True, "username": "alice"}
