"""The sign-in page's ways into the password lifecycle: "Forgot your password?" and
"Create an account", shown only for what is on and for Django's own passwords."""

from __future__ import annotations

import pytest

from webauth.providers import Credentials, DjangoCredentials, Email

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
RESET = 'id="webauth-signin-reset"'
SIGNUP = 'id="webauth-signin-signup"'

pytestmark = pytest.mark.django_db


def configure(settings, providers, passwords):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "providers": providers,
        "passwords": passwords,
    }


def page(client, path="/auth/signin"):
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


def test_both_links_when_both_are_on(settings, client):
    configure(settings, [DjangoCredentials(), Email()], {"signup": True, "reset": True})
    html = page(client, "/auth/signin?callbackUrl=/dashboard")
    assert (
        'href="http://testserver/auth/reset?callbackUrl=http%3A%2F%2Ftestserver%2Fdashboard"'
        in html
    )
    assert (
        'href="http://testserver/auth/signup?callbackUrl=http%3A%2F%2Ftestserver%2Fdashboard"'
        in html
    )
    # Under the password form, and the sign-up at the end: after the services.
    assert html.index("webauth-signin-primary") < html.index(RESET) < html.index(SIGNUP)


@pytest.mark.parametrize(
    ("passwords", "reset", "signup"),
    [({}, False, False), ({"reset": True}, True, False), ({"signup": True}, False, True)],
)
def test_each_link_only_when_its_part_is_on(settings, client, passwords, reset, signup):
    configure(settings, [DjangoCredentials()], passwords)
    html = page(client)
    assert (RESET in html) is reset
    assert (SIGNUP in html) is signup


def test_no_links_for_a_project_s_own_credentials(settings, client):
    own = Credentials(authorize=lambda credentials, request: None)
    configure(settings, [own], {"reset": True})
    assert RESET not in page(client)


def test_no_links_without_a_password_form(settings, client):
    configure(settings, [Email()], {"reset": True})
    assert RESET not in page(client)
