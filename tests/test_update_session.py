"""``webauth.update_session`` / ``aupdate_session`` (Auth.js's ``unstable_update``) and
the ``update_user`` event.

The server-side twin of ``POST /auth/session``: the ``jwt`` and ``session``
callbacks run with ``trigger="update"`` and the data; under ``jwt`` the new token
goes out as the session cookie (by ``AuthMiddleware``), or, on a bearer request,
in the helper's answer. ``update_session_auth_hash`` on a bearer request gives
the app its new token.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.http import JsonResponse
from django.test import Client, RequestFactory
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

from webauth import aupdate_session, update_session, update_session_auth_hash
from webauth import jwt as jose
from webauth.adapters.django import DjangoAdapter
from webauth.flows.accounts import prove_address
from webauth.models import Session
from webauth.signals import session_read, user_updated
from webauth.state import get_state
from webauth.test import session_cookie_for

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"


@csrf_exempt
def update_view(request):
    data = json.loads(request.body or b"null")
    result = update_session(request, data)
    return JsonResponse({"result": result, "auth_session": request.auth_session})


@csrf_exempt
async def aupdate_view(request):
    data = json.loads(request.body or b"null")
    result = await aupdate_session(request, data)
    return JsonResponse({"result": result})


@csrf_exempt
def password_view(request):
    user = request.user
    user.set_password("a new password")
    user.save()
    return JsonResponse({"token": update_session_auth_hash(request, user)})


@csrf_exempt
def update_twice_view(request):
    update_session(request, {"plan": "pro"})
    return JsonResponse({"result": update_session(request, {"seats": 5})})


urlpatterns = [
    path("auth/", include("webauth.urls")),
    path("update/", update_view),
    path("aupdate/", aupdate_view),
    path("update-twice/", update_twice_view),
    path("password/", password_view),
]

CALLS: list = []


def jwt_callback(token, trigger=None, session=None, **kwargs):
    CALLS.append(("jwt", trigger, session))
    if trigger == "update" and isinstance(session, dict):
        return {**token, **{k: session[k] for k in ("plan", "seats") if k in session}}
    return token


def session_callback(session, trigger=None, new_session=None, token=None, user=None, **kwargs):
    CALLS.append(("session", trigger, new_session))
    plan = (token or {}).get("plan") or (new_session or {}).get("plan") or "free"
    seats = (token or {}).get("seats")
    return {**session, "plan": plan, **({"seats": seats} if seats else {})}


def configure(settings, strategy):
    CALLS.clear()
    settings.WEBAUTH = {
        "secret": SECRET,
        "bearer": True,
        "callbacks": {"jwt": jwt_callback, "session": session_callback},
        **(
            {"adapter": ADAPTER, "session": {"strategy": "database"}}
            if strategy == "database"
            else {}
        ),
    }


@pytest.fixture(params=["jwt", "database"])
def strategy(request, settings):
    configure(settings, request.param)
    return request.param


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", email="alice@example.com", password="pw")


def post(client, path, data, **headers):
    return client.post(path, json.dumps(data), content_type="application/json", **headers)


def test_update_runs_the_callbacks_with_trigger_update(strategy, alice):
    client = Client()
    client.cookies[COOKIE] = session_cookie_for(alice)[1]
    CALLS.clear()
    seen = []
    session_read.connect(receiver := lambda **kw: seen.append(kw))
    try:
        response = post(client, "/update/", {"plan": "pro"})
    finally:
        session_read.disconnect(receiver)
    body = response.json()
    update_calls = [c for c in CALLS if c[1] == "update"]
    if strategy == "jwt":
        assert update_calls == [
            ("jwt", "update", {"plan": "pro"}),
            ("session", "update", {"plan": "pro"}),
        ]
    else:
        assert update_calls == [("session", "update", {"plan": "pro"})]
    assert body["result"]["plan"] == "pro"
    assert body["result"]["user"]["email"] == "alice@example.com"
    # request.auth_session shows the update at once.
    assert body["auth_session"] == body["result"]
    assert len(seen) == 1 and seen[0]["session"]["plan"] == "pro"
    assert "sessionToken" not in body["result"]


def test_under_jwt_the_new_token_goes_out_as_the_cookie(settings, alice):
    configure(settings, "jwt")
    client = Client()
    old = session_cookie_for(alice)[1]
    client.cookies[COOKIE] = old
    response = post(client, "/update/", {"plan": "pro"})
    new = response.cookies[COOKIE].value
    assert new != old
    claims = jose.decode(token=new, secret=SECRET, salt=COOKIE)
    assert claims["plan"] == "pro"
    # The next request reads the updated session from the cookie.
    assert client.get("/auth/session").json()["plan"] == "pro"


def test_a_second_update_starts_from_the_first(settings, alice):
    configure(settings, "jwt")
    client = Client()
    client.cookies[COOKIE] = session_cookie_for(alice)[1]
    response = post(client, "/update-twice/", None)
    assert response.json()["result"]["plan"] == "pro"
    assert response.json()["result"]["seats"] == 5
    claims = jose.decode(token=response.cookies[COOKIE].value, secret=SECRET, salt=COOKIE)
    assert claims["plan"] == "pro" and claims["seats"] == 5


def test_under_database_the_cookie_stays(settings, alice):
    configure(settings, "database")
    client = Client()
    token = session_cookie_for(alice)[1]
    client.cookies[COOKIE] = token
    response = post(client, "/update/", {"plan": "pro"})
    assert response.json()["result"]["plan"] == "pro"
    assert COOKIE not in response.cookies  # not due for extension: nothing to write
    assert Session.objects.count() == 1


def test_no_session_no_update(strategy):
    CALLS.clear()
    response = post(Client(), "/update/", {"plan": "pro"})
    assert response.json() == {"result": None, "auth_session": None}
    assert CALLS == []
    assert not response.cookies


def test_async_twin(strategy, alice):
    client = Client()
    client.cookies[COOKIE] = session_cookie_for(alice)[1]
    body = post(client, "/aupdate/", {"plan": "team"}).json()
    assert body["result"]["plan"] == "team"


def test_on_a_bearer_request_the_answer_carries_the_new_token(strategy, alice):
    token = session_cookie_for(alice)[1]
    response = post(Client(), "/update/", {"plan": "pro"}, HTTP_AUTHORIZATION=f"Bearer {token}")
    result = response.json()["result"]
    assert result["plan"] == "pro" and result["tokenType"] == "Bearer"
    assert not response.cookies
    if strategy == "database":
        assert result["sessionToken"] == token
    else:
        assert result["sessionToken"] != token
        assert jose.decode(token=result["sessionToken"], secret=SECRET, salt=COOKIE)["plan"] == (
            "pro"
        )
    refreshed = Client().post(
        "/auth/app/session", HTTP_AUTHORIZATION=f"Bearer {result['sessionToken']}"
    )
    assert refreshed.status_code == 200
    if strategy == "jwt":  # the update is in the token; a database session's callbacks store it
        assert refreshed.json()["plan"] == "pro"


def test_update_session_auth_hash_gives_a_bearer_client_its_token(strategy, alice):
    token = session_cookie_for(alice)[1]
    response = Client().post("/password/", HTTP_AUTHORIZATION=f"Bearer {token}")
    new = response.json()["token"]
    assert new is not None and not response.cookies
    if strategy == "database":
        assert new == token
    else:
        assert new != token
        stale = Client().post("/auth/app/session", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert stale.status_code == 401  # the password changed
    again = Client().post("/auth/app/session", HTTP_AUTHORIZATION=f"Bearer {new}")
    assert again.status_code == 200


def test_update_session_auth_hash_returns_nothing_for_a_cookie(strategy, alice):
    client = Client()
    client.cookies[COOKIE] = session_cookie_for(alice)[1]
    response = client.post("/password/")
    assert response.json() == {"token": None}
    assert client.get("/auth/session").json()["user"]["email"] == "alice@example.com"


# -- update_user ----------------------------------------------------------------------


def test_proving_an_address_sends_update_user(settings, alice):
    # A passkey registration made this user under an address nobody proved; a
    # provider that vouches for it takes the stranger's ways in (and password).
    settings.WEBAUTH = {"secret": SECRET, "adapter": ADAPTER}
    adapter = DjangoAdapter()
    adapter.mark_email_unproven(str(alice.pk))
    record = adapter.get_user(str(alice.pk))
    events = []
    user_updated.connect(receiver := lambda **kw: events.append(kw))
    try:
        request = RequestFactory().get("/")
        assert prove_address(get_state(request), record, "github", "gh-1") is True
        assert prove_address(get_state(request), record, "github", "gh-1") is False
    finally:
        user_updated.disconnect(receiver)
    assert len(events) == 1
    assert events[0]["user"].id == str(alice.pk)
    assert events[0]["sender"] == "github" and events[0]["request"] is request
    alice.refresh_from_db()
    assert not alice.has_usable_password()
