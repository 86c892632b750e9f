"""Private pages and the built-in pages are never cached (issue 13, point 1).

Pages behind ``@auth_required``, ``AuthRequiredMixin``, ``session_passes_test``
and ``protected_paths``, the answers that send a visitor to sign in, and every
built-in page go out with ``Cache-Control: private, no-store``: no shared cache
keeps them, and the browser does not show them again from its cache (the Back
button after signing out; tests/test_pages_browser.py checks that in Chromium).
A header the view set is merged with, not replaced: ``no-store`` wins over its
``max-age``, ``private`` replaces ``public``, stricter directives stay.
"""

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

from webauth.providers import DjangoCredentials, Email
from webauth.test import force_sign_in

from .support.helpers import csrf_pair

pytestmark = pytest.mark.django_db

PRIVATE = {"private", "no-store"}


def directives(response):
    """The ``Cache-Control`` directives of *response*, as a set (empty without one)."""
    header = response.headers.get("Cache-Control", "")
    return {part.strip() for part in header.split(",") if part.strip()}


def assert_private(response):
    found = directives(response)
    assert found >= PRIVATE, found
    assert "public" not in found


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse", first_name="Alice"
    )


@pytest.fixture
def signed_in(client, alice):
    force_sign_in(client, alice)
    return client


# -- views behind the decorators and the mixin -------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/private/",  # @auth_required
        "/private-async/",  # @auth_required on an async view
        "/private-cbv/",  # AuthRequiredMixin
        "/private-cbv-async/",  # AuthRequiredMixin on an async view
        "/private-page/",
    ],
)
def test_protected_view_is_private_and_not_stored(signed_in, path):
    response = signed_in.get(path)
    assert response.status_code == 200
    assert_private(response)


def test_session_passes_test_view_is_private(client):
    staff = get_user_model().objects.create_user("bo", email="bo@staff.example.com")
    force_sign_in(client, staff)
    response = client.get("/staff-only/")
    assert response.status_code == 200
    assert_private(response)


@pytest.mark.parametrize("path", ["/private-public-cache/", "/private-async-public-cache/"])
def test_a_public_header_of_the_view_becomes_private(signed_in, path):
    response = signed_in.get(path)
    assert directives(response) == {"private", "no-store", "max-age=600"}


def test_a_stricter_header_of_the_view_is_kept(signed_in):
    response = signed_in.get("/private-stricter/")
    assert directives(response) == {
        "no-cache",
        "must-revalidate",
        "max-age=0",
        "private",
        "no-store",
    }


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/private/", {}),
        ("/private-async/", {}),
        ("/private-cbv/", {}),
        ("/private-cbv-async/", {}),
        ("/private-custom/", {}),
        ("/private/", {"Accept": "application/json"}),
    ],
)
def test_the_answer_to_a_visitor_is_not_stored_either(client, path, headers):
    # A cached redirect (or 401) would be served again after signing in.
    response = client.get(path, headers=headers)
    assert response.status_code in (302, 401)
    assert_private(response)


def test_other_views_are_left_alone(signed_in):
    assert "Cache-Control" not in signed_in.get("/whoami/")
    assert signed_in.get("/public/")["Cache-Control"] == "public, max-age=600"


# -- protected_paths ---------------------------------------------------------------------------


@pytest.fixture
def members_only(settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "protected_paths": ["/members/", "/members-async/"]}


def test_protected_paths_pages_are_private(signed_in, members_only):
    page = signed_in.get("/members/page/")
    assert page.status_code == 200 and b"Hello, Alice." in page.content
    assert_private(page)
    public = signed_in.get("/members/public/")
    assert directives(public) == {"private", "no-store", "max-age=600"}
    assert signed_in.get("/public/")["Cache-Control"] == "public, max-age=600"


def test_protected_paths_redirect_is_private(client, members_only):
    response = client.get("/members/page/")
    assert response.status_code == 302
    assert_private(response)


def test_protected_paths_under_asgi(async_client, alice, members_only):
    force_sign_in(async_client, alice)
    response = async_to_sync(async_client.get)("/members-async/public/")
    assert response.status_code == 200
    assert directives(response) == {"private", "no-store", "max-age=600"}
    response = async_to_sync(async_client.get)("/private-async-public-cache/")
    assert directives(response) == {"private", "no-store", "max-age=600"}
    response = async_to_sync(async_client.get)("/public/")
    assert response["Cache-Control"] == "public, max-age=600"


# -- the built-in pages ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/auth/signin",
        "/auth/signin?error=CredentialsSignin",
        "/auth/signout",
        "/auth/error",
        "/auth/error?error=AccessDenied",
        "/auth/error?error=Configuration",
        "/auth/verify-request",
    ],
)
def test_built_in_pages_are_private(client, path):
    response = client.get(path)
    assert response["Content-Type"].startswith("text/html")
    assert_private(response)


def test_built_in_pages_of_a_signed_in_user_are_private(signed_in):
    for path in ("/auth/signin", "/auth/signout"):
        assert_private(signed_in.get(path))


def test_sign_in_page_after_a_refused_password_is_private(client, alice):
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "alice", "password": "wrong"},
        follow=True,
    )
    assert response.status_code in (200, 400)
    assert_private(response)


@pytest.fixture
def email_site(settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "providers": [Email(from_email="no-reply@example.com"), DjangoCredentials()],
    }


def test_email_pages_are_private(client, email_site, mailoutbox):
    asked = client.post(
        "/auth/signin/email", {"csrfToken": csrf_pair(client), "email": "alice@example.com"}
    )
    assert asked.status_code == 302
    assert_private(client.get(asked["Location"]))  # "check your email", with the code form
    (message,) = mailoutbox
    link = next(w for w in message.body.split() if "/auth/callback/email?" in w)
    confirm = client.get(link)  # the confirmation page, in the browser that asked
    assert b"webauth-email-confirm" in confirm.content
    assert_private(confirm)
    elsewhere = client_factory_get(link)  # another browser: "finish where you started"
    assert b"webauth-email-elsewhere-signin" in elsewhere.content
    assert_private(elsewhere)
    wrong = client.post(
        "/auth/callback/email",
        {"csrfToken": csrf_pair(client), "code": "AAAA-AAAA", "email": "alice@example.com"},
    )
    assert wrong.status_code == 400  # the page again, saying the code is wrong
    assert_private(wrong)
    bad_address = client.post(
        "/auth/signin/email", {"csrfToken": csrf_pair(client), "email": "not an address"}
    )
    assert bad_address.status_code == 400  # the sign-in page again, with the field's error
    assert_private(bad_address)


def client_factory_get(url):
    from django.test import Client

    return Client().get(url)


def test_passkeys_page_is_private(client, settings, alice):
    from webauth.providers import Passkey

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey(), DjangoCredentials()],
    }
    force_sign_in(client, alice)
    response = client.get("/passkeys/")
    assert response.status_code == 200
    assert_private(response)
    assert_private(client.post("/passkeys/", {"op": "bogus"}))
    client.cookies.clear()
    assert_private(client.get("/passkeys/"))  # the redirect to the sign-in page
