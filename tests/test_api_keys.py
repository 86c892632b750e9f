"""API keys (``WEBAUTH["api_keys"]``, docs/api-keys.md): made once, stored hashed, checked
with one query, refused at once when revoked or expired, never a session.

The same checks run behind the three ways a project uses them: the
``@api_key_required`` decorator on a plain view, DRF's ``ApiKeyAuthentication``
with ``HasApiKeyScopes``, and Ninja's ``ApiKey`` auth.
"""

from __future__ import annotations

import hmac
import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.http import JsonResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import include, path, reverse
from django.utils import timezone
from freezegun import freeze_time
from ninja import NinjaAPI
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from webauth import api_keys
from webauth.api_keys import ApiKeyError, check_new_key, create_key, looks_like_key, revoke_key
from webauth.conf import build_config, get_config
from webauth.contrib.ninja import ApiKey as NinjaApiKey
from webauth.contrib.rest_framework import (
    ApiKeyAuthentication,
    HasApiKeyScopes,
    WebAuthAuthentication,
)
from webauth.decorators import api_key_required
from webauth.models import ApiKey
from webauth.test import session_cookie_for

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
KEY_SHAPE = re.compile(r"^wak_[0-9A-Za-z]{58}$")


@api_key_required("orders:read")
def orders(request):
    return JsonResponse({"user": request.user.username, "key": request.api_key.record.name})


@api_key_required()
def anything(request):
    return JsonResponse({"user": request.user.username, "method": request.method})


class DrfOrders(APIView):
    authentication_classes = [ApiKeyAuthentication, WebAuthAuthentication]
    permission_classes = [IsAuthenticated & HasApiKeyScopes]
    renderer_classes = [JSONRenderer]
    required_scopes = ["orders:read"]

    def get(self, request):
        return Response({"user": request.user.username, "scopes": sorted(request.auth.scopes)})


ninja = NinjaAPI(urls_namespace="webauth-tests-api-keys")


@ninja.get("/orders", auth=NinjaApiKey(scopes=["orders:read"]))
def ninja_orders(request):
    return {"user": request.auth.username, "key": request.api_key.record.name}


urlpatterns = [
    path("admin/", admin.site.urls),
    path("account/", include("webauth.account.urls")),
    path("auth/", include("webauth.urls")),
    path("orders", orders),
    path("anything", anything),
    path("drf/orders", DrfOrders.as_view()),
    path("ninja/", ninja.urls),
]


@pytest.fixture(autouse=True)
def site(settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": ["webauth.providers.DjangoCredentials"],
        "bearer": True,
        "api_keys": {"scopes": ["orders:read", "orders:write", "deploy"]},
    }


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", email="alice@example.com", password="pw")


def bearer(key):
    return Client(headers={"Authorization": f"Bearer {key}"})


# -- the settings -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "key"),
    [
        ({"prefix": "A"}, "prefix"),
        ({"prefix": "has_underscore"}, "prefix"),
        ({"prefix": "1abc"}, "prefix"),
        ({"scopes": ["has space"]}, "scopes"),
        ({"scopes": "orders"}, "scopes"),
        ({"max_age": -5}, "max_age"),
        ({"max_keys": 0}, "max_keys"),
        ({"max_keys": True}, "max_keys"),
        ({"prefx": "x"}, "prefx"),
    ],
)
def test_bad_settings_are_configuration_errors(value, key):
    with pytest.raises(ImproperlyConfigured, match=key):
        build_config({"secret": SECRET, "api_keys": value}, lambda name: None)


def test_off_by_default_and_true_is_the_defaults():
    assert build_config({"secret": SECRET}, lambda name: None).api_keys is None
    options = build_config({"secret": SECRET, "api_keys": True}, lambda name: None).api_keys
    assert (options.prefix, options.scopes, options.max_age, options.max_keys) == (
        "wak",
        (),
        365 * 24 * 3600,
        50,
    )


# -- making keys ----------------------------------------------------------------------------------
def test_a_new_key_is_shown_once_and_stored_hashed(alice):
    made = create_key(alice, name="CI deploys", scopes=["deploy"])
    assert KEY_SHAPE.match(made.key)
    assert looks_like_key(made.key)
    row = ApiKey.objects.get()
    assert made.key.startswith(f"wak_{row.key_id}")
    assert row.secret_hash != made.key and made.key[16:56] not in row.secret_hash
    assert row.scopes == ["deploy"] and row.name == "CI deploys"
    assert row.expires > timezone.now() + timedelta(days=364)
    # Nothing stored holds the key.
    for value in ApiKey.objects.values_list(flat=False).get():
        assert made.key not in str(value)


def test_two_keys_differ(alice):
    first, second = create_key(alice, name="a"), create_key(alice, name="b")
    assert first.key != second.key
    assert first.record.key_id != second.record.key_id


def test_a_changed_character_fails_the_checksum(alice):
    key = create_key(alice, name="a").key
    for at in (4, 20, len(key) - 1):
        changed = key[:at] + ("A" if key[at] != "A" else "B") + key[at + 1 :]
        assert not looks_like_key(changed), at
    assert not looks_like_key("wak_" + "A" * 58)
    assert not looks_like_key(key.replace("wak_", "xyz_"))


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"scopes": ["admin"]}, "unknown scopes"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"expires": "past"}, "past"),
        ({"expires": "far"}, "beyond"),
        ({"expires": None}, "must expire"),
    ],
)
def test_a_key_that_cannot_be_made_says_why(alice, options, problem):
    now = timezone.now()
    expires = {"past": now - timedelta(seconds=1), "far": now + timedelta(days=400)}
    given = {"name": "ok", **options}
    if given.get("expires") in expires:
        given["expires"] = expires[given["expires"]]
    with pytest.raises(ApiKeyError, match=problem):
        create_key(alice, **given)
    assert not ApiKey.objects.exists()


def test_without_max_age_a_key_may_never_expire(alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"max_age": None}}
    made = create_key(alice, name="forever", expires=None)
    assert made.record.expires is None
    assert create_key(alice, name="default").record.expires is None


def test_a_user_holds_at_most_max_keys_live_keys(alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"max_keys": 2}}
    first = create_key(alice, name="1")
    create_key(alice, name="2")
    with pytest.raises(ApiKeyError, match="2 live keys"):
        create_key(alice, name="3")
    revoke_key(first.record)
    assert create_key(alice, name="3")  # a revoked key no longer counts


def test_check_new_key_reads_what_a_form_gives():
    with pytest.raises(ApiKeyError, match="name"):
        check_new_key(name=None)
    name, scopes, _until = check_new_key(name="  spaced  ", scopes="deploy")
    assert (name, scopes) == ("spaced", ["deploy"])


# -- using keys ---------------------------------------------------------------------------------
def test_a_key_authenticates_as_its_user_and_makes_no_session(alice):
    made = create_key(alice, name="reports", scopes=["orders:read"])
    response = bearer(made.key).get("/orders")
    assert response.status_code == 200
    assert response.json() == {"user": "alice", "key": "reports"}
    assert not response.cookies  # no session, no CSRF cookie
    by_header = Client(headers={"X-API-Key": made.key}).get("/orders")
    assert by_header.status_code == 200


def test_one_query_per_request_and_the_last_use_once_a_minute(alice):
    made = create_key(alice, name="k", scopes=["orders:read"])
    client = bearer(made.key)
    with freeze_time("2026-12-01 12:00:00") as clock:
        client.get("/orders")  # the first use writes it
        assert ApiKey.objects.get().last_used_at == timezone.now()
        clock.tick(30)
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/orders").status_code == 200
        assert len(queries) == 1, [q["sql"] for q in queries]
        assert ApiKey.objects.get().last_used_at == timezone.now() - timedelta(seconds=30)
        clock.tick(31)
        client.get("/orders")
        assert ApiKey.objects.get().last_used_at == timezone.now()


@pytest.mark.parametrize(
    "spoil",
    ["wrong secret", "unknown id", "garbage", "other prefix", "too long", "empty"],
)
def test_a_key_that_does_not_hold_is_401(alice, spoil):
    key = create_key(alice, name="k", scopes=["orders:read"]).key
    body = key[4:-6]
    if spoil == "wrong secret":
        other = body[:12] + ("A" if body[12] != "A" else "B") + body[13:]
        key = api_keys._checksum_of(f"wak_{other}")
    elif spoil == "unknown id":
        key = api_keys._checksum_of(f"wak_{'Z' * 12}{body[12:]}")
    elif spoil == "garbage":
        key = "wak_not-a-key"
    elif spoil == "other prefix":
        key = key.replace("wak_", "xyz_")
    elif spoil == "too long":
        key = key + "x" * 300
    else:
        key = ""
    response = bearer(key).get("/orders")
    assert response.status_code == 401
    assert response.json() == {"error": "InvalidApiKey"}
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_revoked_key_is_refused_at_once(alice):
    made = create_key(alice, name="k", scopes=["orders:read"])
    client = bearer(made.key)
    assert client.get("/orders").status_code == 200
    assert revoke_key(ApiKey.objects.get()) is True
    assert client.get("/orders").status_code == 401
    assert revoke_key(ApiKey.objects.get()) is False


def test_an_expired_key_and_an_inactive_user_are_refused(alice):
    made = create_key(
        alice, name="k", scopes=["orders:read"], expires=timezone.now() + timedelta(1)
    )
    with freeze_time(timezone.now() + timedelta(days=1, seconds=1)):
        assert bearer(made.key).get("/orders").status_code == 401
    assert bearer(made.key).get("/orders").status_code == 200
    alice.is_active = False
    alice.save()
    assert bearer(made.key).get("/orders").status_code == 401


def test_a_key_without_the_scope_is_403(alice):
    made = create_key(alice, name="k", scopes=["deploy"])
    response = bearer(made.key).get("/orders")
    assert response.status_code == 403
    assert response.json() == {"error": "InsufficientScope"}
    assert bearer(made.key).get("/anything").status_code == 200  # no scope asked


def test_no_key_is_401_and_a_session_is_no_key(alice):
    assert Client().get("/orders").status_code == 401
    client = Client()
    client.cookies["authjs.session-token"] = session_cookie_for(alice)[1]
    assert client.get("/orders").status_code == 401
    assert bearer(session_cookie_for(alice)[1]).get("/orders").status_code == 401


def test_a_post_needs_no_csrf_token(alice):
    made = create_key(alice, name="k")
    response = Client(enforce_csrf_checks=True, headers={"X-API-Key": made.key}).post("/anything")
    assert response.status_code == 200
    assert response.json()["method"] == "POST"


def test_the_secret_is_compared_in_constant_time(alice, monkeypatch):
    key = create_key(alice, name="k", scopes=["orders:read"]).key
    compared = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(api_keys.hmac, "compare_digest", spy)
    bearer(key).get("/orders")
    body = key[4:-6]
    bearer(api_keys._checksum_of(f"wak_{'Z' * 12}{body[12:]}")).get("/orders")  # unknown id
    # Each request compares a 64-character hash with a 64-character hash (and the
    # checksum): an unknown id costs what a wrong secret does.
    assert compared.count((64, 64)) == 2


def test_failures_are_limited_per_address(alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"api_key_failed": "3/m/ip"}}
    codes = [bearer("wak_nope").get("/orders").status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]


def test_uses_are_limited_per_key(alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"api_key": "2/m/key"}}
    first = create_key(alice, name="a", scopes=["orders:read"]).key
    second = create_key(alice, name="b", scopes=["orders:read"]).key
    codes = [bearer(first).get("/orders").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert bearer(second).get("/orders").status_code == 200  # another key's own count


def test_keys_are_off_without_the_setting(alice, settings):
    made = create_key(alice, name="k", scopes=["orders:read"])
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": None}
    assert bearer(made.key).get("/orders").status_code == 401
    with pytest.raises(ApiKeyError, match="off"):
        create_key(alice, name="k")


# -- DRF and Ninja -----------------------------------------------------------------------------
def test_drf_authenticates_by_key_and_checks_scopes(alice):
    good = create_key(alice, name="k", scopes=["orders:read", "deploy"]).key
    response = bearer(good).get("/drf/orders")
    assert response.status_code == 200
    assert response.json() == {"user": "alice", "scopes": ["deploy", "orders:read"]}
    lacking = create_key(alice, name="l", scopes=["deploy"]).key
    assert bearer(lacking).get("/drf/orders").status_code == 403
    refused = bearer("wak_" + "A" * 58).get("/drf/orders")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")


def test_drf_leaves_a_session_token_to_the_next_class(alice):
    # The bearer session is webauth's too: ApiKeyAuthentication passes, WebAuth
    # signs it in, and HasApiKeyScopes refuses a request with no key.
    response = bearer(session_cookie_for(alice)[1]).get("/drf/orders")
    assert response.status_code == 403


def test_ninja_authenticates_by_key_and_checks_scopes(alice):
    good = create_key(alice, name="ninja", scopes=["orders:read"]).key
    response = bearer(good).get("/ninja/orders")
    assert response.status_code == 200
    assert response.json() == {"user": "alice", "key": "ninja"}
    lacking = create_key(alice, name="l", scopes=["deploy"]).key
    assert bearer(lacking).get("/ninja/orders").status_code == 403
    assert bearer("wak_nope").get("/ninja/orders").status_code == 401
    assert Client().get("/ninja/orders").status_code == 401


# -- the admin ---------------------------------------------------------------------------------
def test_the_admin_makes_a_key_shows_it_once_and_revokes(admin_client, alice):
    add = reverse("admin:webauth_apikey_add")
    response = admin_client.post(
        add, {"user": alice.pk, "name": "from the admin", "scopes": '["deploy"]'}
    )
    # The key on this answer, once, and in no message (a cookie may carry those).
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    key = re.search(r"wak_[0-9A-Za-z]{58}", response.content.decode()).group(0)
    assert "wak_" not in str(response.cookies)
    assert not list(response.wsgi_request._messages)
    row = ApiKey.objects.get()
    assert row.name == "from the admin" and row.scopes == ["deploy"]
    assert bearer(key).get("/anything").status_code == 200
    change = reverse("admin:webauth_apikey_change", args=[row.pk])
    assert key not in admin_client.get(change).content.decode()
    assert row.secret_hash not in admin_client.get(change).content.decode()
    admin_client.post(
        reverse("admin:webauth_apikey_changelist"),
        {"action": "revoke", "_selected_action": [row.pk]},
    )
    assert bearer(key).get("/anything").status_code == 401


def test_the_admin_form_says_what_is_wrong(admin_client, alice):
    response = admin_client.post(
        reverse("admin:webauth_apikey_add"),
        {"user": alice.pk, "name": "bad", "scopes": '["root"]'},
    )
    assert response.status_code == 200
    assert "unknown scopes" in response.content.decode()
    assert not ApiKey.objects.exists()


def test_get_config_sees_the_options():
    assert get_config().api_keys.scopes == ("orders:read", "orders:write", "deploy")


# -- the account center ------------------------------------------------------------------------
def signed_in(user):
    client = Client()
    client.cookies["authjs.session-token"] = session_cookie_for(user)[1]
    client.get("/auth/csrf")
    return client


def post_form(client, url, data):
    client.get(url)
    return client.post(url, {**data, "csrfmiddlewaretoken": client.cookies["csrftoken"].value})


def test_the_account_center_makes_a_key_shows_it_once_and_revokes(alice):
    client = signed_in(alice)
    page = client.get("/account/api-keys/")
    assert page.status_code == 200
    assert "API keys" in page.content.decode() and "no-store" in page["Cache-Control"]
    made = post_form(
        client,
        "/account/api-keys/",
        {"op": "create", "name": "Nightly export", "scopes": ["orders:read"], "days": "90"},
    )
    assert made.status_code == 200
    key = re.search(r"wak_[0-9A-Za-z]{58}", made.content.decode()).group(0)
    row = ApiKey.objects.get()
    assert row.scopes == ["orders:read"] and row.name == "Nightly export"
    assert timedelta(days=89) < row.expires - timezone.now() <= timedelta(days=90)
    assert bearer(key).get("/orders").status_code == 200
    # Shown once: the page again lists it by its first characters only.
    again = client.get("/account/api-keys/").content.decode()
    assert key not in again and f"wak_{row.key_id[:4]}" in again
    revoked = post_form(client, "/account/api-keys/", {"op": "revoke", "key_id": row.key_id})
    assert revoked.status_code in (200, 302)
    assert bearer(key).get("/orders").status_code == 401


def test_the_account_center_refuses_what_cannot_be_made(alice):
    client = signed_in(alice)
    for data in (
        {"op": "create", "name": "", "days": "90"},
        {"op": "create", "name": "x", "scopes": ["root"], "days": "90"},
    ):
        response = post_form(client, "/account/api-keys/", data)
        assert response.status_code == 400
    assert not ApiKey.objects.exists()
    # An unknown "days" is the default life, never a longer one.
    post_form(client, "/account/api-keys/", {"op": "create", "name": "x", "days": "9999"})
    assert ApiKey.objects.get().expires < timezone.now() + timedelta(days=366)


def test_another_users_key_cannot_be_revoked_here(alice):
    bob = get_user_model().objects.create_user("bob", password="pw")
    theirs = create_key(bob, name="bob's")
    client = signed_in(alice)
    response = post_form(
        client, "/account/api-keys/", {"op": "revoke", "key_id": theirs.record.key_id}
    )
    assert response.status_code in (302, 400)
    assert bearer(theirs.key).get("/anything").status_code == 200


def test_making_a_key_needs_a_fresh_sign_in(alice):
    client = Client()
    with freeze_time(timezone.now() - timedelta(hours=1)):
        client.cookies["authjs.session-token"] = session_cookie_for(alice)[1]
    response = post_form(client, "/account/api-keys/", {"op": "create", "name": "x", "days": "30"})
    assert response.status_code == 302
    assert "/account/reauthenticate/" in response["Location"]
    assert not ApiKey.objects.exists()


def test_the_page_and_its_tab_are_there_only_with_api_keys(alice, settings):
    client = signed_in(alice)
    assert 'href="/account/api-keys/"' in client.get("/account/").content.decode()
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": None}
    assert client.get("/account/api-keys/").status_code == 404
    assert 'href="/account/api-keys/"' not in client.get("/account/").content.decode()


def test_making_and_revoking_send_the_api_key_event(alice, settings):
    seen = []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"api_key": lambda **m: seen.append(m)}}
    made = create_key(alice, name="evented", scopes=["deploy"])
    revoke_key(made.record)
    revoke_key(made.record)  # already revoked: nothing
    assert seen == [
        {
            "user_id": str(alice.pk),
            "key_id": made.record.key_id,
            "key_name": "evented",
            "action": "created",
        },
        {"user_id": str(alice.pk), "key_id": made.record.key_id, "action": "revoked"},
    ]
    assert all(made.key not in str(m) for m in seen)
