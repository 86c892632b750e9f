"""The account center's header: ``WEBAUTH["account"]`` (``home_url``, ``site_name``), the
home link resolved as Django resolves ``LOGIN_REDIRECT_URL``, and signing out from it.

Every account page has it (and the re-authentication page); what it links to is
checked here over HTTP, and in a real browser in tests/test_account_header_browser.py.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape
from types import SimpleNamespace

import pytest
from django.core.checks import run_checks
from django.test import Client
from django.urls import reverse_lazy
from django.utils.translation import gettext_lazy

from webauth.account.sections import home_url
from webauth.conf import ConfigError, build_config, get_config
from webauth.conf.sections import home_url_problem
from webauth.models import Session
from webauth.providers import DjangoCredentials, Passkey
from webauth.providers.catalog.github import GitHub

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"

pytestmark = pytest.mark.django_db

PAGES = ["/account/", "/account/sessions/", "/account/connections/", "/account/passkeys/"]
PAGES += ["/account/email/", "/account/security/"]


def no_env(name):
    return None


def config_of(account):
    return build_config({"secret": SECRET, "account": account}, no_env, warn=False)


# -- the setting ---------------------------------------------------------------------------


def test_the_defaults():
    account = build_config({"secret": SECRET}, no_env, warn=False).account
    assert account.home_url is None and account.site_name is None


@pytest.mark.parametrize(
    "value", ["home", "shop:index", "a-b_c", "/", "/dashboard/", "/x?y=1#z", "https://example.com/"]
)
def test_good_home_urls(value):
    assert home_url_problem(value) is None
    assert config_of({"home_url": value}).account.home_url == value


@pytest.mark.parametrize(
    "value",
    [
        "",
        " /home/",
        "/home page/",
        "/a\nb",
        "//evil.example/",
        "/\\evil.example/",
        "javascript:alert(1)",
        "mailto:me@example.com",
        "ftp://example.com/",
        "https:/example.com",
        "dashboard/",
        "home.html",
    ],
)
def test_bad_home_urls_are_refused_with_the_fix(value):
    with pytest.raises(ConfigError) as raised:
        config_of({"home_url": value})
    assert "WEBAUTH['account.home_url']" in raised.value.problem
    assert "LOGIN_REDIRECT_URL" in raised.value.hint
    assert raised.value.check_id == "webauth.E001"


@pytest.mark.parametrize("value", [42, ["home"], {"name": "home"}, b"/home/"])
def test_a_home_url_that_is_not_a_string(value):
    with pytest.raises(ConfigError, match="must be a string"):
        config_of({"home_url": value})


def test_lazy_values_are_kept_for_later():
    lazy_url, lazy_name = reverse_lazy("home"), gettext_lazy("Example")
    account = config_of({"home_url": lazy_url, "site_name": lazy_name}).account
    assert account.home_url is lazy_url and account.site_name is lazy_name


def test_site_name():
    assert config_of({"site_name": "  Example  "}).account.site_name == "Example"
    assert config_of({"site_name": "   "}).account.site_name is None
    with pytest.raises(ConfigError, match="must be a string"):
        config_of({"site_name": 3})


def test_an_unknown_key_gets_a_hint():
    with pytest.raises(ConfigError, match="home_url"):
        config_of({"homeUrl": "/"})
    with pytest.raises(ConfigError, match="Give a dict"):
        config_of("/home/")


# -- resolving the home link -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("login_redirect_url", "expected"),
    [
        ("/whoami/", "/whoami/"),
        ("home", "/"),  # a URL name, reversed
        ("whoami", "/whoami/"),
        (reverse_lazy("private"), "/private/"),
        ("https://example.com/app/", "https://example.com/app/"),
        ("no-such-url-name", "/"),  # unroutable: home, never a 500
        ("javascript:alert(1)", "/"),
        ("//evil.example/", "/"),
        ("", "/"),
    ],
)
def test_by_default_login_redirect_url(settings, login_redirect_url, expected):
    settings.LOGIN_REDIRECT_URL = login_redirect_url
    settings.WEBAUTH = {"secret": SECRET}
    assert home_url(get_config()) == expected


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        ("whoami", "/whoami/"),
        ("/private/", "/private/"),
        ("https://shop.example.com/", "https://shop.example.com/"),
        (reverse_lazy("whoami"), "/whoami/"),
        ("no-such-name", "/"),
    ],
)
def test_the_configured_home_wins(settings, configured, expected):
    settings.LOGIN_REDIRECT_URL = "/elsewhere/"
    settings.WEBAUTH = {"secret": SECRET, "account": {"home_url": configured}}
    assert home_url(get_config()) == expected


def test_a_url_name_that_does_not_reverse_is_w014(settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": [DjangoCredentials()],
        "account": {"home_url": "no-such-name"},
    }
    [warning] = [m for m in run_checks() if m.id == "webauth.W014"]
    assert "'no-such-name'" in warning.msg and "'/'" in warning.msg
    for good in ("whoami", "/no/such/path/", "https://example.com/", reverse_lazy("x")):
        settings.WEBAUTH = {**settings.WEBAUTH, "account": {"home_url": good}}
        assert "webauth.W014" not in [m.id for m in run_checks()]


# -- on the pages ----------------------------------------------------------------------------


@pytest.fixture
def site(settings):
    settings.LOGIN_REDIRECT_URL = "/whoami/"
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "database"},
        "experimental": {"enable_webauthn": True},
        "mfa": {"enabled": True},
        "providers": [DjangoCredentials(), Passkey(), GitHub(client_id="i", client_secret="s")],
    }
    return settings


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )


def signed_in(user):
    client = Client(enforce_csrf_checks=True)
    token = client.get("/auth/csrf").json()["csrfToken"]
    answer = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": user.get_username(), "password": PASSWORD},
    )
    assert answer.status_code == 302
    return client


def header_of(html):
    [header] = re.findall(r'<header class="webauth-account-header">.*?</header>', html, re.S)
    return header


def fields_of(form_html):
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form_html))


@pytest.mark.parametrize("page", [*PAGES, "/account/reauthenticate/"])
def test_every_account_page_has_the_header(site, alice, page):
    client = signed_in(alice)
    if page.endswith("reauthenticate/"):
        Session.objects.update(created_at=datetime(2000, 1, 1, tzinfo=UTC))  # not fresh
    response = client.get(page)
    assert response.status_code == 200, response
    html = response.content.decode()
    assert '<body class="webauth webauth-account-body">' in html
    header = header_of(html)
    assert html.index(header) < html.index("<main")
    assert '<a class="webauth-account-home" href="/whoami/">testserver</a>' in header
    form = re.search(
        r'<form class="webauth-account-signout" method="post" action="([^"]+)">', header
    )
    assert form.group(1) == "http://testserver/auth/signout"
    fields = fields_of(header)
    assert fields["callbackUrl"] == "http://testserver/whoami/"
    # Auth.js's CSRF token, whose cookie the page sets (or had set).
    cookie = unescape(client.cookies["authjs.csrf-token"].value)
    assert cookie.split("|")[0] == fields["csrfToken"]


def test_the_header_signs_out(site, alice):
    client = signed_in(alice)
    fields = fields_of(header_of(client.get("/account/passkeys/").content.decode()))
    done = client.post("/auth/signout", fields)
    assert done.status_code == 302 and done["Location"] == "http://testserver/whoami/"
    assert client.get("/auth/session").json() is None
    assert not Session.objects.exists()


def test_the_configured_name_and_logo(site, alice):
    site.WEBAUTH = {
        **site.WEBAUTH,
        "theme": {"logo": "https://cdn.example.com/logo.svg"},
        "account": {"home_url": "https://example.com/", "site_name": 'Tom & "Jerry"'},
    }
    header = header_of(signed_in(alice).get("/account/").content.decode())
    assert (
        '<a class="webauth-account-home" href="https://example.com/">'
        '<img class="webauth-account-logo" src="https://cdn.example.com/logo.svg"'
        ' alt="Tom &amp; &quot;Jerry&quot;"></a>' in header
    )
    # Signing out lands where the redirect callback allows: another site's URL is
    # the origin by default, as everywhere in Auth.js.
    assert fields_of(header)["callbackUrl"] == "http://testserver"


def test_the_name_of_the_site_framework(site, alice, monkeypatch):
    """With django.contrib.sites, get_current_site is its Site: its name; a SITE_ID that
    names no site (Site.DoesNotExist) falls back to the host, never a 500."""
    from django.core.exceptions import ObjectDoesNotExist

    from webauth.account import sections

    monkeypatch.setattr(sections, "get_current_site", lambda request: SimpleNamespace(name="Ex"))
    client = signed_in(alice)
    assert ">Ex</a>" in header_of(client.get("/account/").content.decode())

    def no_site(request):
        raise ObjectDoesNotExist("Site matching query does not exist.")

    monkeypatch.setattr(sections, "get_current_site", no_site)
    assert ">Home</a>" in header_of(client.get("/account/").content.decode())


def test_a_visitor_gets_no_header_and_no_token(site, client):
    response = client.get("/account/passkeys/")
    assert response.status_code == 302
    assert "authjs.csrf-token" not in response.cookies
