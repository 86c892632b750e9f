"""The built-in pages say where the visitor stands (issue 13, points 5 and 7).

- A sign-out whose form expired (no valid CSRF token) shows the sign-out page
  again, saying so, and signs nobody out; JSON clients keep Auth.js's answer.
- The redirect of ``@auth_required``, ``AuthRequiredMixin`` and
  ``protected_paths`` shows why ("Please sign in to access this page.").
- The sign-in page tells a signed-in visitor who they are, with "Continue" and
  "Sign out"; the sign-out page tells a signed-out one they are not signed in.
- A refused password shows the form again with the username kept, never the
  password.
"""

import logging
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model

from webauth.pages import SIGNOUT_ERRORS
from webauth.test import force_sign_in

from .support.helpers import csrf_pair

pytestmark = pytest.mark.django_db

SESSION = "authjs.session-token"


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse", first_name="Alice"
    )


class Page(HTMLParser):
    """The alert, the status box, the inputs and the links of a built-in page."""

    def __init__(self, html):
        super().__init__()
        self.inputs = {}
        self.links = {}
        self.alerts = []
        self.status = []
        self._texts = None
        self._link = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("name"):
            self.inputs[attrs["name"]] = attrs.get("value")
        if attrs.get("role") == "alert":
            self._texts = self.alerts
        if attrs.get("role") == "status":
            self._texts = self.status
        if tag == "a":
            self._link = attrs.get("href")

    def handle_endtag(self, tag):
        if tag == "div":
            self._texts = None
        if tag == "a":
            self._link = None

    def handle_data(self, data):
        if self._texts is not None and data.strip():
            self._texts.append(data.strip())
        if self._link is not None and data.strip():
            self.links[data.strip()] = self._link


def page_of(response):
    return Page(response.content.decode())


# -- point 5: the sign-out form expired ----------------------------------------------------------


@pytest.mark.parametrize("token", ["f" * 64, "", None])
def test_an_expired_sign_out_form_shows_the_sign_out_page_again(client, alice, token, caplog):
    caplog.set_level(logging.DEBUG)
    force_sign_in(client, alice)
    csrf_pair(client)  # the browser holds a CSRF cookie; the form's token is another one
    data = {"callbackUrl": "/bye/"} | ({"csrfToken": token} if token is not None else {})
    response = client.post("/auth/signout", data)

    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/signout?error=MissingCSRF"
    assert SESSION not in response.cookies  # still signed in: nothing was done
    assert client.get("/auth/session").json()["user"]["email"] == "alice@example.com"
    assert "[auth][warn][MissingCSRF]" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

    again = client.get(response["Location"])
    assert again.status_code == 200
    page = page_of(again)
    assert page.alerts == [str(SIGNOUT_ERRORS["MissingCSRF"])]
    assert "sign-in" not in page.alerts[0]
    # The new form carries the current token and where to go: it signs out.
    assert page.inputs["callbackUrl"] == "http://testserver/bye/"
    done = client.post("/auth/signout", {"csrfToken": page.inputs["csrfToken"]})
    assert done["Location"] == "http://testserver/bye/"
    assert done.cookies[SESSION]["max-age"] == "0"
    assert client.get("/auth/session").json() is None


def test_a_browser_without_a_csrf_cookie_gets_one_with_the_page(client, alice):
    force_sign_in(client, alice)
    response = client.post("/auth/signout", {"csrfToken": "x"})
    assert response["Location"] == "http://testserver/auth/signout?error=MissingCSRF"
    assert "authjs.csrf-token" in response.cookies
    page = page_of(client.get(response["Location"]))
    done = client.post("/auth/signout", {"csrfToken": page.inputs["csrfToken"]})
    assert done.cookies[SESSION]["max-age"] == "0"


@pytest.mark.parametrize(
    "headers",
    [{"X-Auth-Return-Redirect": "1"}, {"Accept": "application/json"}],
)
def test_json_clients_keep_the_authjs_answer(client, alice, headers):
    force_sign_in(client, alice)
    response = client.post("/auth/signout", {"csrfToken": "f" * 64}, headers=headers)
    url = "http://testserver/auth/signin?error=MissingCSRF"
    if "X-Auth-Return-Redirect" in headers:
        assert response.status_code == 200 and response.json() == {"url": url}
    else:
        assert response.status_code == 302 and response["Location"] == url
    assert SESSION not in response.cookies
    assert client.get("/auth/session").json() is not None


def test_a_custom_sign_out_page_gets_the_error(client, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"sign_out": "/goodbye/"}}
    force_sign_in(client, alice)
    response = client.post("/auth/signout", {"csrfToken": "f" * 64})
    assert response["Location"] == "http://testserver/goodbye/?error=MissingCSRF"


def test_the_sign_out_page_ignores_other_error_values(client, alice):
    force_sign_in(client, alice)
    assert page_of(client.get("/auth/signout?error=<b>x</b>")).alerts == []
