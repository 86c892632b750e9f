"""Listing and revoking a user's database sessions (webauth.user_sessions)."""

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import RequestFactory

from webauth.middleware import AuthMiddleware
from webauth.models import Session
from webauth.user_sessions import list_sessions, revoke_session, sign_out_everywhere

from .support.helpers import csrf_pair

pytestmark = pytest.mark.django_db
COOKIE = "authjs.session-token"


@pytest.fixture(autouse=True)
def db_strategy(settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": "webauth.adapters.django.DjangoAdapter"}


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="pw-bob-12345")


def sign_in(client, agent):
    token = csrf_pair(client)
    client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "bob", "password": "pw-bob-12345"},
        headers={"User-Agent": agent},
    )
    return client.cookies[COOKIE].value


def request_with(token):
    request = RequestFactory().get("/")
    request.COOKIES[COOKIE] = token
    AuthMiddleware(lambda r: HttpResponse())(request)  # as if it had been served
    return request


def test_list_sessions_shows_devices_and_marks_the_current_one(client_factory, bob):
    phone, laptop = client_factory(), client_factory()
    sign_in(phone, "Phone")
    laptop_token = sign_in(laptop, "Laptop")
    sessions = list_sessions(bob, request_with(laptop_token))
    assert [s.user_agent for s in sessions] == ["Laptop", "Phone"]
    assert [s.current for s in sessions] == [True, False]
    assert all(s.ip_address == "127.0.0.1" and s.expires > s.created_at for s in sessions)


def test_revoke_session_signs_that_device_out(client_factory, bob):
    phone = client_factory()
    sign_in(phone, "Phone")
    (session,) = list_sessions(bob)
    assert revoke_session(bob, session.id) is True
    assert phone.get("/auth/session").json() is None


def test_revoke_session_of_another_user_is_refused(client_factory, bob):
    other = get_user_model().objects.create_user("eve")
    phone = client_factory()
    sign_in(phone, "Phone")
    (session,) = list_sessions(bob)
    assert revoke_session(other, session.id) is False
    assert Session.objects.count() == 1


def test_sign_out_everywhere_keeps_the_current_session(client_factory, bob):
    first, second, third = client_factory(), client_factory(), client_factory()
    sign_in(first, "A")
    sign_in(second, "B")
    current = sign_in(third, "C")
    assert sign_out_everywhere(bob, request_with(current)) == 2
    assert first.get("/auth/session").json() is None
    assert third.get("/auth/session").json() is not None


def test_sign_out_everywhere_without_request_removes_all(client_factory, bob):
    sign_in(client_factory(), "A")
    sign_in(client_factory(), "B")
    assert sign_out_everywhere(bob) == 2
    assert list_sessions(bob) == []


# -- through any adapter -------------------------------------------------------------------


def test_session_management_goes_through_a_third_party_adapter(settings):
    from datetime import timedelta

    from asgiref.sync import async_to_sync
    from django.utils import timezone

    from webauth.testing.memory import MemoryAdapter
    from webauth.types import AdapterSession, AdapterUser

    adapter = MemoryAdapter()
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": adapter}
    user = async_to_sync(adapter.create_user)(AdapterUser(id="", email="m@example.com"))
    tokens = []
    for agent in ("Phone", "Laptop", "Tablet"):
        record = AdapterSession(
            session_token=f"token-{agent}",
            user_id=user.id,
            expires=timezone.now() + timedelta(days=1),
            user_agent=agent,
        )
        async_to_sync(adapter.create_session)(record)
        tokens.append(record.session_token)
    listed = list_sessions(user, request_with("token-Laptop"))
    assert [(s.user_agent, s.current) for s in listed] == [
        ("Tablet", False),
        ("Laptop", True),
        ("Phone", False),
    ]
    assert Session.objects.count() == 0  # nothing went to the Django tables
    assert revoke_session(user, listed[0].id) is True
    assert sign_out_everywhere(user, request_with("token-Laptop")) == 1
    assert list(adapter.sessions) == ["token-Laptop"]
