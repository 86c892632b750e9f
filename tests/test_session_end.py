"""Sessions that end when they should (issue 10): under both strategies.

* a deactivated (or deleted) user's session ends everywhere, and the user cannot
  sign in again (``AccessDenied``);
* a password change ends every session made before it, except the one that
  made it when the project calls ``webauth.update_session_auth_hash``;
* a sign-in gives a ``django.contrib.sessions`` session a new key (fixation);
* ``session.absolute_max_age`` ends a session that long after its sign-in.
"""

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpResponse, JsonResponse
from django.test import RequestFactory
from django.urls import path
from django.utils.http import http_date
from freezegun import freeze_time

import webauth
from webauth import jwt as jose
from webauth.conf import ConfigError, build_config
from webauth.errors import AccessDenied
from webauth.flows.signin import Attempt, SignedIn, finish
from webauth.models import Session
from webauth.sessions import AUTH_HASH_CLAIM, AUTH_TIME_CLAIM
from webauth.state import get_state
from webauth.test import force_sign_in

from .support.helpers import csrf_pair, query
from .support.urls import urlpatterns as support_urlpatterns

pytestmark = pytest.mark.django_db
COOKIE = "authjs.session-token"
SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "pw-alice-123"
DAY = 86_400
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


# -- a password-change view, as a project writes one ----------------------------------------


def change_password(request):
    user = request.user
    user.set_password(request.POST["new"])
    user.save()
    webauth.update_session_auth_hash(request, user)
    return HttpResponse("changed")


async def change_password_async(request):
    from asgiref.sync import sync_to_async

    user = await request.auser()
    user.set_password("async-new-pw")
    await sync_to_async(user.save)()
    await webauth.aupdate_session_auth_hash(request, user)
    return HttpResponse("changed")


def change_someone_elses_password(request):
    other = get_user_model().objects.get(username="bob")
    other.set_password("bob-new-pw")
    other.save()
    webauth.update_session_auth_hash(request, other)  # not this request's user: no effect
    return JsonResponse({"session": request.auth_session})


def plant_session_data(request):
    request.session["planted"] = "by someone"
    return HttpResponse("ok")


def sign_out_here(request):
    return webauth.sign_out(request, "/")


urlpatterns = [
    path("change-password/", change_password),
    path("change-password-async/", change_password_async),
    path("change-bobs-password/", change_someone_elses_password),
    path("plant/", plant_session_data),
    path("sign-out-here/", sign_out_here),
    *support_urlpatterns,
]


# -- fixtures and helpers -----------------------------------------------------------------


@pytest.fixture(params=["jwt", "database"])
def strategy(request, settings):
    if request.param == "database":
        settings.WEBAUTH = {**settings.WEBAUTH, "adapter": "webauth.adapters.django.DjangoAdapter"}
    return request.param


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD, first_name="Alice"
    )


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="pw-bob-123")


def sign_in(client, username="alice", password=PASSWORD):
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": username, "password": password},
    )
    assert response.status_code == 302
    return response


def signed_in(client):
    return client.get("/auth/session").json() is not None


def cookie_deleted(response):
    morsel = response.cookies.get(COOKIE)
    return morsel is not None and morsel.value == "" and str(morsel["max-age"]) == "0"


def claims_of(value):
    return jose.decode(token=value, secret=SECRET, salt=COOKIE)


def deactivate(user):
    user.is_active = False
    user.save()


def new_password(user, password="a-new-password-456"):
    user.set_password(password)
    user.save()


# -- inactive and deleted users (found item 2) ------------------------------------------------


def test_deactivated_user_loses_request_auth_session(client, alice, strategy):
    sign_in(client)
    assert client.get("/session-only/").json()["session"] is not None
    deactivate(alice)
    response = client.get("/session-only/")
    assert response.json()["session"] is None
    assert cookie_deleted(response)


def test_deactivated_user_gets_no_session_from_the_session_route(client, alice, strategy):
    sign_in(client)
    deactivate(alice)
    response = client.get("/auth/session")
    assert response.json() is None
    assert cookie_deleted(response)
    if strategy == "database":
        assert not Session.objects.exists()


def test_deactivated_user_is_refused_by_auth_required(client, alice, strategy):
    sign_in(client)
    assert client.get("/private/").status_code == 200
    deactivate(alice)
    response = client.get("/private/")
    assert response.status_code == 302
    assert response["Location"].startswith("/auth/signin?callbackUrl=")


def test_deactivated_user_is_refused_by_protected_paths(client, alice, strategy, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "protected_paths": ["/account/"]}
    sign_in(client)
    assert client.get("/account/settings/").status_code == 200
    deactivate(alice)
    response = client.get("/account/settings/")
    assert response.status_code == 302
    assert response["Location"].startswith("/auth/signin?callbackUrl=")


def test_deactivated_user_is_refused_by_auser(client, alice, strategy):
    sign_in(client)
    deactivate(alice)
    assert client.get("/whoami-async/").json()["authenticated"] is False


def test_deleted_user_ends_the_session(client, alice, strategy):
    sign_in(client)
    alice.delete()
    assert client.get("/session-only/").json()["session"] is None
    assert not signed_in(client)


def test_session_of_a_user_that_is_not_a_django_user_is_kept(client, alice):
    # What a custom authorize() or an adapter-less OAuth sign-in returns: no
    # stored user to check, so the session lives as in Auth.js.
    force_sign_in(client, {"id": "ext-7", "name": "Outsider"})
    assert client.get("/session-only/").json()["session"]["user"]["name"] == "Outsider"


def test_reactivated_user_must_sign_in_again(client, alice, strategy):
    sign_in(client)
    deactivate(alice)
    assert not signed_in(client)
    alice.is_active = True
    alice.save()
    assert not signed_in(client)  # the cookie was deleted: the session is over


def test_credentials_sign_in_of_an_inactive_user_is_access_denied(client, alice, settings):
    # With ModelBackend, authenticate() already refuses (CredentialsSignin, which
    # says nothing about the account); a backend that lets inactive users through
    # is refused by webauth itself.
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.AllowAllUsersModelBackend"]
    deactivate(alice)
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "alice", "password": PASSWORD},
    )
    assert query(response["Location"])["error"] == "AccessDenied"
    assert COOKIE not in response.cookies


class _Attempt(Attempt):
    """A sign-in whose first half found *user* (any future kind of provider)."""

    def __init__(self, user, stored=None):
        self.provider_id = "test"
        self.callback_url = "/"
        self.user = user
        self.stored = stored if stored is not None else user
        self.stored_calls = 0

    def sign_in_params(self):
        return {"user": self.user, "account": None}

    def store(self, state):
        self.stored_calls += 1
        return SignedIn(user=self.stored, user_dict={"id": self.stored.pk}, account=None)


@pytest.fixture
def request_():
    return RequestFactory().post("/auth/callback/test")


def test_the_shared_end_of_sign_in_refuses_an_inactive_user(alice, request_):
    deactivate(alice)
    attempt = _Attempt(alice)
    with pytest.raises(AccessDenied):
        finish(get_state(request_), attempt)
    assert attempt.stored_calls == 0  # refused before anything is stored


def test_the_shared_end_refuses_an_inactive_user_the_flow_found(alice, bob, request_):
    # The first half knew no user (a new email, say); storing found an inactive one.
    deactivate(bob)
    attempt = _Attempt({"id": None, "email": "bob@example.com"}, stored=bob)
    with pytest.raises(AccessDenied):
        finish(get_state(request_), attempt)


def test_the_shared_end_signs_in_an_active_user(alice, request_):
    response = finish(get_state(request_), _Attempt(alice))
    assert response.status_code == 302 and COOKIE in response.cookies


# -- password changes (found item 3) ---------------------------------------------------------


def test_password_change_ends_every_earlier_session(client_factory, alice, strategy):
    first, second = client_factory(), client_factory()
    sign_in(first)
    sign_in(second)
    new_password(alice)
    for browser in (first, second):
        response = browser.get("/session-only/")
        assert response.json()["session"] is None
        assert cookie_deleted(response)
        assert not signed_in(browser)
    if strategy == "database":
        assert not Session.objects.exists()


def test_password_change_ends_the_session_for_request_user_too(client, alice, strategy):
    sign_in(client)
    new_password(alice)
    assert client.get("/whoami/").json()["authenticated"] is False


def test_sign_in_after_the_change_works(client, alice, strategy):
    sign_in(client)
    new_password(alice, "fresh-password-789")
    assert not signed_in(client)
    sign_in(client, password="fresh-password-789")
    assert signed_in(client)


@pytest.mark.urls("tests.test_session_end")
def test_update_session_auth_hash_keeps_the_session_that_changed_it(
    client_factory, alice, strategy
):
    mine, other = client_factory(), client_factory()
    sign_in(mine)
    sign_in(other)
    response = mine.post("/change-password/", {"new": "changed-pw-000"})
    assert response.status_code == 200
    if strategy == "jwt":
        alice.refresh_from_db()
        claims = claims_of(response.cookies[COOKIE].value)
        assert claims[AUTH_HASH_CLAIM] == alice.get_session_auth_hash()
    assert signed_in(mine)
    assert mine.get("/whoami/").json()["username"] == "alice"
    assert not signed_in(other)


@pytest.mark.urls("tests.test_session_end")
def test_async_update_session_auth_hash(client_factory, alice, strategy):
    mine, other = client_factory(), client_factory()
    sign_in(mine)
    sign_in(other)
    assert mine.get("/change-password-async/").status_code == 200
    assert signed_in(mine)
    assert not signed_in(other)


@pytest.mark.urls("tests.test_session_end")
def test_update_session_auth_hash_for_another_user_changes_nothing(client, alice, bob, strategy):
    bob_browser = type(client)()
    sign_in(client)
    sign_in(bob_browser, "bob", "pw-bob-123")
    response = client.get("/change-bobs-password/")
    assert response.json()["session"] is not None  # alice's session is untouched
    assert COOKIE not in response.cookies or strategy == "database"
    assert signed_in(client)
    assert not signed_in(bob_browser)  # bob's password changed: his session ended


def test_sessions_survive_a_secret_key_rotation(client, alice, strategy, settings):
    sign_in(client)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-brand-new-secret-key-for-django-0000000"
    assert signed_in(client)


def test_jwt_callback_cannot_drop_the_binding(client, alice, settings):
    def jwt_cb(*, token, **kwargs):
        return {"sub": token["sub"], "name": token.get("name")}  # a fresh dict each time

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": jwt_cb}}
    sign_in(client)
    response = client.get("/auth/session")  # re-issued through the callback
    assert AUTH_HASH_CLAIM in claims_of(response.cookies[COOKIE].value)
    new_password(alice)
    assert not signed_in(client)


def test_request_user_is_the_user_the_jwt_callback_names(client, alice, bob, settings):
    # The session is checked against the user it was signed in as (alice, still
    # valid); request.user is the user of the sub the callback returns, not her.
    def jwt_cb(*, token, trigger=None, **kwargs):
        return token if trigger else {**token, "sub": str(bob.pk)}

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": jwt_cb}}
    sign_in(client)
    assert client.get("/whoami/").json()["username"] == "bob"


def test_the_token_keeps_authjs_claims_and_carries_an_hmac_not_the_hash(client, alice):
    with freeze_time(T0):
        response = sign_in(client)
    claims = claims_of(response.cookies[COOKIE].value)
    assert claims["sub"] == str(alice.pk) and claims["name"] == "Alice"
    assert claims["exp"] - claims["iat"] == 30 * DAY  # Auth.js's exp = iat + maxAge
    assert claims[AUTH_TIME_CLAIM] == int(T0.timestamp())
    assert claims[AUTH_HASH_CLAIM] == alice.get_session_auth_hash()
    assert alice.password not in str(claims)


def test_bound_jwt_session_and_user_cost_one_query(client, alice, django_assert_num_queries):
    sign_in(client)
    with django_assert_num_queries(1):
        assert client.get("/whoami/").json()["username"] == "alice"


def test_the_session_route_checks_the_user_in_one_query(client, alice, django_assert_num_queries):
    sign_in(client)
    with django_assert_num_queries(1):
        assert client.get("/auth/session").json()["user"]["name"] == "Alice"


def test_database_session_and_user_still_cost_one_query(
    client, alice, settings, django_assert_num_queries
):
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": "webauth.adapters.django.DjangoAdapter"}
    sign_in(client)
    with django_assert_num_queries(1):
        assert client.get("/whoami/").json()["username"] == "alice"


def test_database_session_stores_the_auth_hash(client, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": "webauth.adapters.django.DjangoAdapter"}
    sign_in(client)
    assert Session.objects.get().auth_hash == alice.get_session_auth_hash()


def test_database_session_from_before_the_migration_is_not_checked(client, alice, settings):
    # Rows made before 0004 have no hash: they are read as before until they end.
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": "webauth.adapters.django.DjangoAdapter"}
    sign_in(client)
    Session.objects.update(auth_hash="")
    new_password(alice)
    assert signed_in(client)


# -- session fixation (found item 4) -----------------------------------------------------------


@pytest.mark.urls("tests.test_session_end")
def test_sign_in_gives_the_contrib_session_a_new_key(client, alice, strategy):
    client.get("/plant/")
    planted = client.cookies["sessionid"].value
    assert SessionStore().exists(planted)
    response = sign_in(client)
    new_key = response.cookies["sessionid"].value
    assert new_key and new_key != planted
    assert not SessionStore().exists(planted)  # the planted key is dead
    assert SessionStore(session_key=new_key).load()["planted"] == "by someone"


def test_sign_in_empties_another_users_contrib_session(client, alice, bob, strategy):
    client.force_login(bob)
    old = client.cookies["sessionid"].value
    sign_in(client)
    assert not SessionStore().exists(old)
    assert client.get("/whoami/").json()["username"] == "alice"
    assert "_auth_user_id" not in client.session


def test_sign_in_keeps_the_contrib_session_of_the_same_user(client, alice, strategy):
    client.force_login(alice)
    old = client.cookies["sessionid"].value
    sign_in(client)
    assert client.cookies["sessionid"].value != old
    assert client.session["_auth_user_id"] == str(alice.pk)


def test_sign_in_without_a_contrib_session_creates_none(client, alice, strategy):
    response = sign_in(client)
    assert "sessionid" not in response.cookies


@pytest.mark.urls("tests.test_session_end")
def test_sign_out_empties_the_contrib_session_as_logout_does(client, alice, strategy):
    # What a view kept for the signed-in person (a basket, a draft) is not left
    # in the browser for whoever signs in next.
    sign_in(client)
    client.get("/plant/")
    kept = client.cookies["sessionid"].value
    assert SessionStore().exists(kept)
    response = client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
    assert response.status_code == 302 and cookie_deleted(response)
    assert not SessionStore().exists(kept)
    assert response.cookies["sessionid"].value == ""  # SessionMiddleware deletes it
    assert not signed_in(client)


@pytest.mark.urls("tests.test_session_end")
def test_sign_out_from_a_view_empties_the_contrib_session_too(client, alice, strategy):
    sign_in(client)
    client.get("/plant/")
    kept = client.cookies["sessionid"].value
    client.get("/sign-out-here/")
    assert not SessionStore().exists(kept)


def test_sign_out_without_a_contrib_session_creates_none(client, alice, strategy):
    sign_in(client)
    response = client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
    assert "sessionid" not in response.cookies


# -- absolute lifetime (found item 10) -----------------------------------------------------------


@pytest.fixture
def absolute(settings, strategy):
    """Sessions end 3 days after sign-in (idle timeout and slide: the defaults)."""
    session = {"absolute_max_age": 3 * DAY}
    if strategy == "database":
        session["update_age"] = 0  # extend on every read: the cap must still hold
    settings.WEBAUTH = {**settings.WEBAUTH, "session": session}
    return strategy


def test_session_ends_at_absolute_max_age_however_active(client, alice, absolute):
    with freeze_time(T0):
        sign_in(client)
    for hours in (12, 30, 50, 71):
        with freeze_time(T0 + timedelta(hours=hours)):
            assert signed_in(client), hours
    with freeze_time(T0 + timedelta(days=3, seconds=1)):
        response = client.get("/session-only/")
        assert response.json()["session"] is None
        assert cookie_deleted(response)
        assert not signed_in(client)
    if absolute == "database":
        assert not Session.objects.exists()


def test_absolute_max_age_caps_the_cookie_and_the_token(client, alice, absolute):
    deadline = T0 + timedelta(days=3)
    with freeze_time(T0):
        sign_in(client)
    with freeze_time(T0 + timedelta(days=2)):
        response = client.get("/auth/session")
    assert response.json()["expires"] <= "2030-01-04T12:00:00.000Z"
    assert response.cookies[COOKIE]["expires"] == http_date(deadline.timestamp())
    if absolute == "jwt":
        claims = claims_of(response.cookies[COOKIE].value)
        assert claims["exp"] == int(deadline.timestamp())
        assert claims[AUTH_TIME_CLAIM] == int(T0.timestamp())
    else:
        assert Session.objects.get().expires == deadline


def test_sessions_slide_forever_without_absolute_max_age(client, alice, strategy):
    with freeze_time(T0):
        sign_in(client)
    for days in range(20, 201, 20):
        with freeze_time(T0 + timedelta(days=days)):
            assert signed_in(client), days


def test_lowering_absolute_max_age_ends_older_sessions(client, alice, strategy, settings):
    with freeze_time(T0):
        sign_in(client)
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"absolute_max_age": DAY}}
    with freeze_time(T0 + timedelta(hours=25)):
        assert not signed_in(client)


def test_an_authjs_token_without_a_sign_in_time_starts_its_clock_when_reissued(
    client, alice, settings
):
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"absolute_max_age": 3 * DAY}}
    with freeze_time(T0):
        value = jose.encode(
            token={"sub": "ext-1", "name": "From Next.js"}, secret=SECRET, salt=COOKIE
        )
    client.cookies[COOKIE] = value
    with freeze_time(T0 + timedelta(days=1)):
        response = client.get("/auth/session")
    assert claims_of(response.cookies[COOKIE].value)[AUTH_TIME_CLAIM] == int(
        (T0 + timedelta(days=1)).timestamp()
    )
    with freeze_time(T0 + timedelta(days=4, seconds=1)):
        assert not signed_in(client)


def test_a_token_without_a_sign_in_time_starts_its_clock_when_the_limit_is_turned_on(
    client, alice, settings
):
    # Re-issued while the limit is off, it gets no sign-in time: turning the limit
    # on later gives it the whole absolute_max_age from then, not from that read.
    with freeze_time(T0):
        value = jose.encode(
            token={"sub": "ext-1", "name": "From Next.js"}, secret=SECRET, salt=COOKIE
        )
    client.cookies[COOKIE] = value
    with freeze_time(T0 + timedelta(days=1)):
        response = client.get("/auth/session")
    assert response.json()["user"] == {"name": "From Next.js"}
    assert AUTH_TIME_CLAIM not in claims_of(response.cookies[COOKIE].value)
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"absolute_max_age": 3 * DAY}}
    with freeze_time(T0 + timedelta(days=5)):
        assert signed_in(client)
    with freeze_time(T0 + timedelta(days=8)):
        assert not signed_in(client)


# -- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, True, "3600", 1.5])
def test_bad_absolute_max_age_is_refused(value):
    with pytest.raises(ConfigError) as info:
        build_config({"secret": SECRET, "session": {"absolute_max_age": value}}, lambda name: None)
    assert info.value.check_id == "webauth.E010"
    assert "absolute_max_age" in str(info.value)


def test_absolute_max_age_is_off_by_default():
    config = build_config({"secret": SECRET}, lambda name: None)
    assert config.session.absolute_max_age is None


def test_system_check_reports_a_bad_absolute_max_age(settings):
    from webauth.checks import check_config

    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"absolute_max_age": 0}}
    assert [m.id for m in check_config()] == ["webauth.E010"]


def test_system_check_says_what_a_short_absolute_max_age_means(settings):
    from webauth.checks import check_config

    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"absolute_max_age": DAY}}
    messages = [m for m in check_config() if m.id == "webauth.I001"]
    assert len(messages) == 1 and "max_age" in messages[0].msg
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"absolute_max_age": 60 * DAY}}
    assert not [m for m in check_config() if m.id == "webauth.I001"]


def test_helpers_are_public():
    assert webauth.update_session_auth_hash.__module__ == "webauth.helpers"
    assert async_to_sync is not None and "aupdate_session_auth_hash" in webauth.__all__


# -- OAuth sign-in of an inactive user (found item 2) ------------------------------------------


@pytest.fixture
def oidc(settings, live_server):
    from django.core.cache import cache

    from webauth.providers.oauth import OIDC

    from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, start_idp

    def configure(strategy, *extra_providers):
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
            "providers": [*extra_providers, provider],
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
        }
        return idp

    return configure


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("session_strategy", ["jwt", "database"])
def test_oauth_sign_in_of_an_inactive_user_is_access_denied(client, oidc, session_strategy):
    from webauth.models import Account

    from .support.oidc_helpers import sign_in as oidc_sign_in

    idp = oidc(session_strategy)
    first = oidc_sign_in(client, idp)
    assert COOKIE in first.cookies and "error" not in first["Location"]
    user = Account.objects.get(provider="example").user
    deactivate(user)
    assert not signed_in(client)  # the existing session ended
    again = oidc_sign_in(type(client)(), idp)
    assert query(again["Location"])["error"] == "AccessDenied"
    assert COOKIE not in again.cookies or again.cookies[COOKIE].value == ""


# -- the Django adapter's session row ----------------------------------------------------------


def test_django_adapter_keeps_created_at_and_auth_hash(alice):
    from webauth.adapters.django import DjangoAdapter
    from webauth.types import AdapterSession

    adapter = DjangoAdapter()
    record = adapter.create_session(
        AdapterSession(
            session_token="tok-1",
            user_id=str(alice.pk),
            expires=T0 + timedelta(days=30),
            created_at=T0,
            auth_hash="h1",
        )
    )
    assert record.created_at == T0 and record.auth_hash == "h1"
    stored, user = adapter.get_session_and_user("tok-1")
    assert stored.created_at == T0 and stored.auth_hash == "h1" and user.id == str(alice.pk)
    updated = adapter.update_session({"session_token": "tok-1", "auth_hash": "h2"})
    assert updated.auth_hash == "h2" and updated.expires == T0 + timedelta(days=30)
    assert adapter.update_session({"session_token": "nope", "auth_hash": "h3"}) is None
    wire = record.to_wire()
    assert wire["sessionToken"] == "tok-1" and wire["userId"] == str(alice.pk)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("session_strategy", ["jwt", "database"])
def test_an_ended_session_does_not_link_a_new_account(client, oidc, session_strategy):
    # A stolen cookie of a session that ended with the password change must not
    # let its holder attach their own provider account to the victim's user.
    from webauth.models import Account

    from .support.oidc_helpers import sign_in as oidc_sign_in

    idp = oidc(session_strategy, "webauth.providers.DjangoCredentials")
    victim = get_user_model().objects.create_user("victim", password="old-password-1")
    sign_in(client, "victim", "old-password-1")
    new_password(victim)
    response = oidc_sign_in(client, idp)
    assert "error" not in response["Location"]
    assert Account.objects.get(provider="example").user != victim


class _UsersUnavailable:
    """The Django adapter with its user lookup failing (a database outage)."""

    def __init__(self):
        from webauth.adapters.django import DjangoAdapter

        self._inner = DjangoAdapter()

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def get_user(self, id):
        raise RuntimeError("database unavailable")


def test_a_failing_user_lookup_signs_out_for_that_request_only(client, alice, settings):
    sign_in(client)
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": _UsersUnavailable(),
        "session": {"strategy": "jwt"},
    }
    response = client.get("/session-only/")
    assert response.json()["session"] is None
    assert COOKIE not in response.cookies  # the cookie is kept for when it works again
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": None}
    assert signed_in(client)


# -- tokens issued before sessions were bound to their user --------------------------------------


def legacy_token(user, when=T0):
    """A JWT as webauth made it before this change (or an Auth.js app makes it)."""
    with freeze_time(when):
        return jose.encode(
            token={"sub": str(user.pk), "name": "Alice", "email": "alice@example.com"},
            secret=SECRET,
            salt=COOKIE,
        )


def test_a_legacy_token_of_an_inactive_user_ends_when_its_user_is_loaded(client, alice):
    client.cookies[COOKIE] = legacy_token(alice, datetime.now(UTC))
    deactivate(alice)
    response = client.get("/whoami/")
    assert response.json()["authenticated"] is False
    assert cookie_deleted(response)
    assert not signed_in(client)


def test_a_legacy_token_is_bound_to_its_user_when_reissued(client, alice):
    client.cookies[COOKIE] = legacy_token(alice)
    with freeze_time(T0 + timedelta(days=2)):  # past update_age: the middleware re-issues
        response = client.get("/whoami/")
        assert response.json()["username"] == "alice"
        claims = claims_of(response.cookies[COOKIE].value)
    assert claims[AUTH_HASH_CLAIM] == alice.get_session_auth_hash()
    new_password(alice)
    with freeze_time(T0 + timedelta(days=2, hours=1)):
        assert not signed_in(client)


def csrf_view(request):
    from django.middleware.csrf import get_token

    return HttpResponse(get_token(request))


urlpatterns.append(path("django-csrf/", csrf_view))


@pytest.mark.urls("tests.test_session_end")
def test_sign_in_renews_djangos_csrf_token(client, alice, strategy):
    client.get("/django-csrf/")
    old = client.cookies["csrftoken"].value
    response = sign_in(client)
    assert response.cookies["csrftoken"].value not in ("", old)


def test_sign_in_without_djangos_csrf_cookie_sets_none(client, alice, strategy):
    assert "csrftoken" not in sign_in(client).cookies
