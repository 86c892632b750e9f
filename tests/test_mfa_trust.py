""" "Trust this browser" (``mfa.trust_days``): skipping the code, and every way the trust ends.

A browser trusted at a sign-in with a code skips the code at its next sign-ins,
for that user only, until the trust ends: its days run out, the password
changes, the user forgets it (one, or all) in the account center, signs out
everywhere, or an admin resets the user's second factors. Skipping is not
proving: ``@mfa_required`` still asks, and then the trust is ignored.
"""

from __future__ import annotations

import time

import pyotp
import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import Client
from django.urls import include, path
from freezegun import freeze_time

from webauth.decorators import mfa_required
from webauth.mfa.access import assurance
from webauth.models import TrustedBrowser

from .support.helpers import csrf_pair, session_cookie
from .support.mfa import add_key, at

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
TRUSTED = "authjs.mfa-trusted"
NOW = float(int(time.time()))

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _now():
    """NOW is each test's own start: set at import, a long suite would reach the module
    minutes later, and keys confirmed at the real time would outrun codes made for it."""
    global NOW
    NOW = float(int(time.time()))


@mfa_required
def payroll(request):
    return HttpResponse("payroll")


def methods(request):
    return HttpResponse(" ".join(assurance(request).amr))


urlpatterns = [
    path("admin/", admin.site.urls),
    path("auth/", include("webauth.urls")),
    path("account/", include("webauth.account.urls")),
    path("payroll/", payroll),
    path("methods/", methods),
]


@pytest.fixture
def site(settings):
    def configure(trust_days=30, strategy="database"):
        settings.ROOT_URLCONF = __name__
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
            "providers": ["webauth.providers.DjangoCredentials"],
            "mfa": {"enabled": True, "trust_days": trust_days, "notify": False},
        }

    configure()
    return configure


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", "ada@example.com", PASSWORD)


@pytest.fixture
def key(site, ada):
    return add_key(ada, NOW - 300)


def password(client, callback="/"):
    return client.post(
        "/auth/callback/credentials",
        {
            "csrfToken": csrf_pair(client),
            "username": "ada",
            "password": PASSWORD,
            "callbackUrl": callback,
        },
    )


def code(client, value, **extra):
    return client.post("/auth/mfa", {"csrfToken": csrf_pair(client), "code": value, **extra})


def trusted_client(key, when=None) -> Client:
    when = NOW if when is None else when
    """A browser that signed in with a code and ticked "trust this browser", signed out since."""
    client = Client()
    with freeze_time(at(when)):
        password(client)
        done = code(client, pyotp.TOTP(key).at(when), trust="1")
        assert session_cookie(done) and done.cookies[TRUSTED]["max-age"] == str(30 * 86400)
    client.cookies.pop("authjs.session-token")
    return client


def test_the_box_is_offered_only_with_trust_days(key, site):
    with freeze_time(at(NOW)):
        client = Client()
        password(client)
        page = client.get("/auth/mfa").content.decode()
        assert 'name="trust"' in page and "Don't ask again on this browser for 30 days" in page
    site(trust_days=0)
    other = Client()
    password(other)
    assert b'name="trust"' not in other.get("/auth/mfa").content


def test_a_trusted_browser_skips_the_code_and_says_so(key):
    client = trusted_client(key)
    with freeze_time(at(NOW + 60)):
        again = password(client)
        assert session_cookie(again)  # no code asked
        assert client.get("/methods/").content == b"pwd trusted_browser"
        # Another browser is asked, and so is this one for another user.
        assert password(Client())["Location"].endswith("/auth/mfa")


def test_the_trust_ends_when_its_days_run_out(key):
    client = trusted_client(key)
    with freeze_time(at(NOW + 31 * 86400)):
        assert password(client)["Location"].endswith("/auth/mfa")


def test_a_password_change_ends_every_trust(key, ada):
    client = trusted_client(key)
    ada.set_password("a brand new password 123")
    ada.save()
    with freeze_time(at(NOW + 60)):
        asked = client.post(
            "/auth/callback/credentials",
            {
                "csrfToken": csrf_pair(client),
                "username": "ada",
                "password": "a brand new password 123",
            },
        )
        assert asked["Location"].endswith("/auth/mfa")


def test_forgetting_it_in_the_account_center(key):
    client = trusted_client(key)
    with freeze_time(at(NOW + 60)):
        password(client, "/account/security/")
        page = client.get("/account/security/").content.decode()
        assert "Trusted browsers" in page and "Forget every browser" in page
        [browser] = TrustedBrowser.objects.all()
        client.post("/account/security/", {"op": "forget", "browser": str(browser.pk)})
        assert not TrustedBrowser.objects.exists()
        client.cookies.pop("authjs.session-token")
        assert password(client)["Location"].endswith("/auth/mfa")


def test_signing_out_everywhere_and_an_admin_reset_end_it(key, ada, admin_client):
    from django.urls import reverse

    client = trusted_client(key)
    with freeze_time(at(NOW + 60)):
        password(client, "/account/sessions/")
        client.post("/account/sessions/", {"op": "everywhere"})
        assert not TrustedBrowser.objects.exists()
    other = trusted_client(key, NOW + 120)
    admin_client.post(
        reverse("admin:auth_user_changelist"),
        {"action": "reset_second_factors", "_selected_action": [ada.pk]},
    )
    assert not TrustedBrowser.objects.exists()
    with freeze_time(at(NOW + 180)):
        assert session_cookie(password(other))  # no key any more: no code either


def test_mfa_required_asks_for_the_code_even_on_a_trusted_browser(key):
    client = trusted_client(key)
    with freeze_time(at(NOW + 60)):
        password(client)
        refused = client.get("/payroll/")
        assert "mfa=1" in refused["Location"]
        page = client.get(refused["Location"])
        assert page.cookies["authjs.mfa-fresh"].value == "1"
        asked = password(client, "/payroll/")
        assert asked["Location"].endswith("/auth/mfa")  # the trust is set aside
        done = code(client, pyotp.TOTP(key).at(NOW + 60))
        assert (
            done.cookies["authjs.mfa-fresh"]["max-age"] == 0
            or done.cookies["authjs.mfa-fresh"]["max-age"] == "0"
        )
        assert client.get("/payroll/").content == b"payroll"
