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

from webauth.pages import SIGNIN_ERRORS, SIGNOUT_ERRORS
from webauth.test import force_sign_in

from .support.helpers import csrf_pair, query

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


# -- point 7: why the visitor was sent to sign in ---------------------------------------------


@pytest.mark.parametrize("path", ["/private/", "/private-async/", "/private-cbv/", "/members/x"])
def test_the_redirect_to_sign_in_says_why(client, settings, path):
    settings.WEBAUTH = {**settings.WEBAUTH, "protected_paths": ["/members/"]}
    response = client.get(path)
    assert response.status_code == 302
    assert query(response["Location"]) == {"callbackUrl": path, "error": "SessionRequired"}
    page = page_of(client.get(response["Location"]))
    assert page.alerts == ["Please sign in to access this page."]
    assert page.alerts == [str(SIGNIN_ERRORS["SessionRequired"])]
    assert page.inputs["callbackUrl"] == f"http://testserver{path}"


def test_a_custom_sign_in_page_gets_the_reason_too(client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"sign_in": "/login/"}}
    response = client.get("/private/")
    assert response["Location"] == "/login/?callbackUrl=%2Fprivate%2F&error=SessionRequired"


def test_redirect_to_is_left_as_given(client):
    assert client.get("/private-custom/")["Location"] == "/custom-login/"


# -- point 7: the sign-in page of a signed-in visitor ---------------------------------------------


def test_the_sign_in_page_says_who_is_signed_in(client, alice):
    force_sign_in(client, alice)
    page = page_of(client.get("/auth/signin?callbackUrl=/account/settings/"))
    assert page.status == ["You are signed in as", "Alice", ".", "Continue", "Sign out"]
    assert page.links["Continue"] == "http://testserver/account/settings/"
    assert page.links["Sign out"] == "http://testserver/auth/signout"
    # The forms stay: signing in with another provider links it (Auth.js), and
    # signing in as someone else replaces the session.
    assert "username" in page.inputs and "password" in page.inputs


def test_a_signed_in_visitor_without_a_name_is_shown_the_address(client):
    # Users of a custom authorize: what the session has is what the page can say.
    force_sign_in(client, {"id": "x1", "email": "x@example.com"})
    status = page_of(client.get("/auth/signin")).status
    assert status[:3] == ["You are signed in as", "x@example.com", "."]
    client.cookies.clear()
    force_sign_in(client, {"id": "42"})
    assert page_of(client.get("/auth/signin")).status[0] == "You are signed in."


def test_a_visitor_sees_no_status_on_the_sign_in_page(client):
    page = page_of(client.get("/auth/signin"))
    assert page.status == [] and "Continue" not in page.links


# -- point 7: the sign-out page of a signed-out visitor -------------------------------------------


def test_the_sign_out_page_tells_a_visitor_they_are_not_signed_in(client):
    response = client.get("/auth/signout?callbackUrl=/somewhere/")
    text = response.content.decode()
    page = page_of(response)
    assert "You are not signed in." in text
    assert "Are you sure" not in text
    assert "csrfToken" not in page.inputs  # no form: nothing to sign out of
    assert page.links["Sign in"] == (
        "http://testserver/auth/signin?callbackUrl=http%3A%2F%2Ftestserver%2Fsomewhere%2F"
    )


def test_the_sign_out_page_of_a_signed_in_visitor_asks(client, alice):
    force_sign_in(client, alice)
    response = client.get("/auth/signout")
    text = response.content.decode()
    assert "Are you sure you want to sign out?" in text
    assert "You are signed in as <strong>Alice</strong>." in text
    assert "You are not signed in" not in text
    assert "csrfToken" in page_of(response).inputs


def test_an_expired_sign_out_form_of_a_signed_out_visitor(client):
    # Signed out meanwhile (another tab): nothing to try again.
    page = client.get("/auth/signout?error=MissingCSRF").content.decode()
    assert "You are not signed in." in page
    assert "sign-out form expired" not in page


# -- point 7: a refused password keeps the username ------------------------------------------------


def refuse(client, **fields):
    token = csrf_pair(client)
    return client.post("/auth/callback/credentials", {"csrfToken": token, **fields})


def test_a_refused_password_keeps_the_username_never_the_password(client, alice):
    response = refuse(client, username="alice", password="wrong horse")
    # Auth.js's answer is kept: the redirect to the sign-in page with the error.
    assert response.status_code == 302
    assert response["Location"] == (
        "http://testserver/auth/signin?error=CredentialsSignin&code=credentials"
    )
    assert "wrong horse" not in str(response.cookies)
    page = client.get(response["Location"])
    form = page_of(page)
    assert form.alerts == [str(SIGNIN_ERRORS["CredentialsSignin"])]
    assert form.inputs["username"] == "alice"
    assert form.inputs["password"] is None
    assert "wrong horse" not in page.content.decode()
    # Shown once: the page forgets it.
    assert page.cookies["authjs.signin-form"]["max-age"] == "0"
    assert page_of(client.get(response["Location"])).inputs["username"] is None


def test_the_kept_username_is_escaped_and_bound_to_its_provider(client, alice):
    response = refuse(client, username='"><script>x</script>', password="p")
    html = client.get(response["Location"]).content.decode()
    assert "<script>x" not in html
    assert 'value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in html


def test_no_username_is_kept_for_json_clients_or_a_custom_page(client, alice, settings):
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "alice", "password": "wrong"},
        headers={"X-Auth-Return-Redirect": "1"},
    )
    assert response.json()["url"].endswith("error=CredentialsSignin&code=credentials")
    assert not response.cookies
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"sign_in": "/login/"}}
    response = refuse(client, username="alice", password="wrong")
    assert query(response["Location"]) == {"error": "CredentialsSignin", "code": "credentials"}
    assert "authjs.signin-form" not in response.cookies


def test_a_planted_form_cookie_is_ignored(client, alice):
    client.cookies["authjs.signin-form"] = "not-a-jwe"
    page = page_of(client.get("/auth/signin?error=CredentialsSignin"))
    assert page.inputs["username"] is None
