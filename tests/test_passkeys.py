"""The passkey management API (webauth.passkeys): list, rename, remove, and its page."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory
from django.urls import path
from django.utils import formats, timezone

from webauth import passkeys
from webauth.models import Account, Authenticator
from webauth.providers import DjangoCredentials, Passkey
from webauth.test import force_sign_in

from .support.authenticator import SoftAuthenticator
from .support.urls import urlpatterns as base_patterns
from .test_flows_webauthn import SECRET, register

pytestmark = pytest.mark.django_db

# Before the base patterns: the account center (webauth.account.urls) is at account/ too.
urlpatterns = [path("account/passkeys/", passkeys.passkeys_view), *base_patterns]


@pytest.fixture
def site(settings):
    settings.ROOT_URLCONF = __name__
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey(), DjangoCredentials()],
    }


@pytest.fixture
def owner(client, site):
    """A user with two passkeys (made through the routes) and no password."""
    first, second = SoftAuthenticator(), SoftAuthenticator()
    assert register(client, first).status_code == 200
    assert register(client, second, email=None).status_code == 200
    user = get_user_model().objects.get(email="new@example.com")
    assert not user.has_usable_password()
    return user


def request_of(user):
    request = RequestFactory().get("/")
    request.user = user if user is not None else AnonymousUser()
    return request


def test_list(owner):
    entries = passkeys.list_passkeys(request_of(owner))
    # The second one's default name is told apart by the day it was added.
    day = formats.date_format(timezone.localdate(), "SHORT_DATE_FORMAT")
    assert [e.name for e in entries] == ["Chrome on Linux", f"Chrome on Linux ({day})"]
    entry = entries[0]
    assert entry.id == Authenticator.objects.order_by("pk").first().credential_id
    assert entry.synced and entry.backed_up and entry.device_type == "multiDevice"
    assert entry.transports == ("hybrid", "internal")
    assert entry.created_at is not None and entry.last_used_at is None


def test_rename(owner):
    request = request_of(owner)
    entry = passkeys.list_passkeys(request)[0]
    renamed = passkeys.rename_passkey(request, entry.id, "  My\tphone\x00 \u202e ")
    assert renamed is not None and renamed.name == "My phone"
    assert Authenticator.objects.get(credential_id=entry.id).name == "My phone"
    long = passkeys.rename_passkey(request, entry.id, "x" * 500)
    assert long is not None and long.name == "x" * 100
    with pytest.raises(ValueError):
        passkeys.rename_passkey(request, entry.id, " \n ")
    assert passkeys.rename_passkey(request, "no-such-id", "x") is None


def test_remove_never_the_last(owner):
    request = request_of(owner)
    first, second = passkeys.list_passkeys(request)
    assert passkeys.remove_passkey(request, first.id) is True
    assert Account.objects.filter(user=owner, provider="passkey").count() == 1
    with pytest.raises(passkeys.LastSignInMethod):
        passkeys.remove_passkey(request, second.id)
    assert Authenticator.objects.filter(user=owner).count() == 1
    assert passkeys.remove_passkey(request, first.id) is False


def test_a_password_lets_the_last_passkey_go(owner):
    owner.set_password("correct horse")
    owner.save()
    request = request_of(owner)
    for entry in passkeys.list_passkeys(request):
        assert passkeys.remove_passkey(request, entry.id)
    assert not Authenticator.objects.exists()


def test_another_users_passkeys_are_out_of_reach(owner):
    mallory = get_user_model().objects.create_user("mallory", password="x")
    target = passkeys.list_passkeys(request_of(owner))[0]
    request = request_of(mallory)
    assert passkeys.list_passkeys(request) == []
    assert passkeys.rename_passkey(request, target.id, "mine") is None
    assert passkeys.remove_passkey(request, target.id) is False
    assert Authenticator.objects.filter(user=owner).count() == 2


def test_a_visitor_is_refused(site):
    for call in (
        lambda r: passkeys.list_passkeys(r),
        lambda r: passkeys.rename_passkey(r, "x", "y"),
        lambda r: passkeys.remove_passkey(r, "x"),
    ):
        with pytest.raises(PermissionDenied):
            call(request_of(None))


def test_async_twins(owner):
    request = request_of(owner)

    async def run():
        entries = await passkeys.alist_passkeys(request)
        renamed = await passkeys.arename_passkey(request, entries[0].id, "Laptop")
        removed = await passkeys.aremove_passkey(request, entries[1].id)
        return entries, renamed, removed

    # async_to_sync: the sync parts run on this thread, in the test's transaction.
    entries, renamed, removed = async_to_sync(run)()
    assert len(entries) == 2 and renamed.name == "Laptop" and removed is True


# -- the page ------------------------------------------------------------------------------


def test_the_page_lists_and_acts(client, owner):
    page = client.get("/account/passkeys/")
    assert page.status_code == 200 and page["Cache-Control"] == "private, no-store"
    html = page.content.decode()
    assert html.count('class="webauth-passkey"') == 2
    assert 'id="webauth-passkey-register"' in html  # add another
    first = passkeys.list_passkeys(request_of(owner))[0]
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.cookies = client.cookies
    # Without Django's CSRF token: refused.
    refused = csrf_client.post("/account/passkeys/", {"op": "remove", "credential_id": first.id})
    assert refused.status_code == 403
    assert Authenticator.objects.filter(user=owner).count() == 2
    csrf_client.get("/account/passkeys/")
    token = csrf_client.cookies["csrftoken"].value
    response = csrf_client.post(
        "/account/passkeys/",
        {
            "op": "rename",
            "credential_id": first.id,
            "name": "Work laptop",
            "csrfmiddlewaretoken": token,
        },
    )
    assert response.status_code == 302
    assert Authenticator.objects.get(credential_id=first.id).name == "Work laptop"
    response = csrf_client.post(
        "/account/passkeys/",
        {"op": "remove", "credential_id": first.id, "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    follow = csrf_client.get("/account/passkeys/")
    assert "The passkey was removed." in follow.content.decode()
    last = passkeys.list_passkeys(request_of(owner))[0]
    response = csrf_client.post(
        "/account/passkeys/",
        {"op": "remove", "credential_id": last.id, "csrfmiddlewaretoken": token},
        follow=True,
    )
    assert "only way to sign in" in response.content.decode()
    assert Authenticator.objects.filter(user=owner).count() == 1


def test_the_page_for_a_visitor(client, site):
    response = client.get("/account/passkeys/")
    assert response.status_code == 302
    assert response["Location"].startswith("/auth/signin?callbackUrl=")
    response = client.get("/account/passkeys/", headers={"Accept": "application/json"})
    assert response.status_code == 401


def test_the_page_for_a_password_user(client, site):
    alice = get_user_model().objects.create_user("alice", email="a@example.com", password="x")
    force_sign_in(client, alice)
    page = client.get("/account/passkeys/")
    assert "You have no passkeys yet." in page.content.decode()
    assert 'data-needs-email="false"' in page.content.decode()
    assert Authenticator.objects.count() == 0
