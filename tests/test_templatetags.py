"""``{% load webauth %}``: ``webauth_signin_buttons`` and ``provider_signin_url``.

The buttons are one POST form per provider carrying webauth's double-submit CSRF
token; the response that shows them sets the matching CSRF cookie, so the forms
work on a page the user opens first.
"""

import re

import pytest
from django.contrib.auth import get_user_model
from django.template import TemplateSyntaxError, engines

from webauth import cookies as ck
from webauth.state import get_state

from .support.helpers import csrf_pair

CSRF_COOKIE = "authjs.csrf-token"

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse"
    )


def render(source, request=None, context=None):
    template = engines["django"].from_string("{% load webauth %}" + source)
    return template.render(context or {}, request)


def hidden_values(html, name):
    return re.findall(rf'<input type="hidden" name="{name}" value="([^"]*)">', html)


def csrf_cookie_token(response, name=CSRF_COOKIE):
    value = ck.decode_value(response.cookies[name].coded_value)
    token, _, digest = value.partition("|")
    assert len(digest) == 64
    return token


# -- webauth_signin_buttons ----------------------------------------------------------------


def test_buttons_render_a_post_form_per_provider(client):
    html = client.get("/buttons/").content.decode()
    assert html.count("<form ") == 1
    assert 'action="http://testserver/auth/callback/credentials" method="post"' in html
    assert 'name="username"' in html and 'name="password"' in html
    assert 'type="password"' in html
    assert "Sign in with Password" in html


def test_buttons_render_every_configured_provider(client, settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": ["webauth.providers.DjangoCredentials", "github"],
    }
    html = client.get("/buttons/").content.decode()
    assert html.count("<form ") == 2
    assert 'action="http://testserver/auth/signin/github" method="post"' in html
    assert len(hidden_values(html, "csrfToken")) == 2


def test_buttons_set_a_csrf_cookie_matching_the_hidden_token(client):
    response = client.get("/buttons/")
    [token] = hidden_values(response.content.decode(), "csrfToken")
    assert len(token) == 64
    assert csrf_cookie_token(response) == token
    morsel = response.cookies[CSRF_COOKIE]
    assert morsel["httponly"] and morsel["samesite"] == "Lax" and morsel["path"] == "/"


def test_buttons_reuse_an_existing_csrf_cookie(client):
    token = csrf_pair(client)
    response = client.get("/buttons/")
    assert hidden_values(response.content.decode(), "csrfToken") == [token]
    assert CSRF_COOKIE not in response.cookies


def test_buttons_over_https_set_the_host_prefixed_cookie(client):
    response = client.get("/buttons/", secure=True)
    [token] = hidden_values(response.content.decode(), "csrfToken")
    assert csrf_cookie_token(response, "__Host-" + CSRF_COOKIE) == token
    assert response.cookies["__Host-" + CSRF_COOKIE]["secure"]
    assert 'action="https://testserver/auth/callback/credentials"' in response.content.decode()


def test_submitting_the_rendered_form_signs_in(client, alice):
    html = client.get("/buttons/").content.decode()
    [token] = hidden_values(html, "csrfToken")
    [callback_url] = hidden_values(html, "callbackUrl")
    response = client.post(
        "/auth/callback/credentials",
        {
            "csrfToken": token,
            "callbackUrl": callback_url,
            "username": "alice",
            "password": "correct horse",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/buttons/"
    assert client.get("/whoami/").json()["username"] == "alice"


def test_callback_url_defaults_to_the_current_page(client):
    html = client.get("/buttons/?tab=1").content.decode()
    assert hidden_values(html, "callbackUrl") == ["http://testserver/buttons/?tab=1"]


def test_callback_url_argument(rf):
    html = render('{% webauth_signin_buttons callback_url="/next/" %}', rf.get("/"))
    assert hidden_values(html, "callbackUrl") == ["http://testserver/next/"]


def test_foreign_callback_url_goes_through_the_redirect_callback(rf):
    html = render('{% webauth_signin_buttons callback_url="https://evil.example/" %}', rf.get("/"))
    assert hidden_values(html, "callbackUrl") == ["http://testserver"]


def test_callback_url_is_html_escaped(rf):
    html = render("{% webauth_signin_buttons callback_url=url %}", rf.get("/"), {"url": '/n/"><b>'})
    assert '"><b>' not in html
    assert hidden_values(html, "callbackUrl") == ["http://testserver/n/&quot;&gt;&lt;b&gt;"]


def test_two_button_sets_on_one_page_share_one_token(rf):
    request = rf.get("/")
    html = render("{% webauth_signin_buttons %}{% webauth_signin_buttons %}", request)
    tokens = hidden_values(html, "csrfToken")
    assert len(tokens) == 2 and tokens[0] == tokens[1]
    assert get_state(request).pending_csrf.token == tokens[0]


def test_buttons_without_request_in_context_is_a_clear_error():
    with pytest.raises(TemplateSyntaxError, match="needs the request"):
        render("{% webauth_signin_buttons %}")


# -- provider_signin_url -----------------------------------------------------------------


# -- webauth_csrf_token --------------------------------------------------------------------


def test_csrf_token_tag_sets_the_matching_cookie_once(client):
    response = client.get("/login-form/")
    tokens = hidden_values(response.content.decode(), "csrfToken")
    assert len(tokens) == 2 and tokens[0] == tokens[1] and len(tokens[0]) == 64
    assert csrf_cookie_token(response) == tokens[0]


def test_csrf_token_tag_reuses_an_existing_cookie(client):
    token = csrf_pair(client)
    response = client.get("/login-form/")
    assert hidden_values(response.content.decode(), "csrfToken") == [token, token]
    assert CSRF_COOKIE not in response.cookies


def test_a_hand_written_form_signs_in(client, alice):
    [token, _] = hidden_values(client.get("/login-form/").content.decode(), "csrfToken")
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "alice", "password": "correct horse"},
    )
    assert response.status_code == 302
    assert client.get("/whoami/").json()["username"] == "alice"


def test_csrf_token_tag_without_request_in_context_is_a_clear_error():
    with pytest.raises(TemplateSyntaxError, match="needs the request"):
        render("{% webauth_csrf_token %}")


def test_provider_signin_url_of_credentials_is_the_callback_route():
    assert render('{% provider_signin_url "credentials" %}') == "/auth/callback/credentials"


def test_provider_signin_url_of_oauth_provider_is_the_signin_route(settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "providers": ["github"]}
    assert render('{% provider_signin_url "github" %}') == "/auth/signin/github"


def test_provider_signin_url_as_variable():
    html = render('{% provider_signin_url "credentials" as url %}<a href="{{ url }}">')
    assert html == '<a href="/auth/callback/credentials">'


def test_provider_signin_url_of_unknown_provider_is_an_error():
    with pytest.raises(TemplateSyntaxError, match="Unknown webauth provider 'nope'"):
        render('{% provider_signin_url "nope" %}')
