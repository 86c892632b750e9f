"""Sign-up under AUTH_USER_MODEL = "webauth.User", whose USERNAME_FIELD is the address.

Run by tests/test_passwords_signup.py in a subprocess with
tests.support.settings_user_model (the user model cannot change in one process).
"""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail

from webauth.models import UnprovenEmail
from webauth.passwords import signup as flow

from .helpers import csrf_pair

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery 9"
pytestmark = pytest.mark.django_db


@pytest.fixture
def site(settings):
    def configure(verify=True):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "providers": ["webauth.providers.DjangoCredentials"],
            "passwords": {"signup": {"verify_email": verify}},
        }

    configure()
    return configure


def sign_up(client, email):
    data = {
        "csrfToken": csrf_pair(client),
        "email": email,
        "password1": PASSWORD,
        "password2": PASSWORD,
    }
    response = client.post("/auth/signup", data)
    flow.wait_for_mail()
    return response


def test_the_form_asks_for_the_address_and_the_password_only(site, client):
    html = client.get("/auth/signup").content.decode()
    assert 'name="email"' in html and 'name="password1"' in html
    assert 'name="username"' not in html


def test_sign_up_with_the_code_then_sign_in_with_the_password(site, client):
    assert sign_up(client, "Ada@Example.com").status_code == 200
    code = re.search(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", mail.outbox[0].body).group()
    done = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert done.status_code == 302
    user = get_user_model().objects.get()
    assert user.email == "ada@example.com" and user.email_verified is not None
    again = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "ada@example.com", "password": PASSWORD},
    )
    assert again.status_code == 302 and "error" not in again["Location"]


def test_a_taken_address_gets_the_new_ones_answer(site, client):
    get_user_model().objects.create_user("taken@example.com", "x")
    taken = sign_up(client, "taken@example.com")
    new = sign_up(client, "fresh@example.com")
    assert taken.status_code == new.status_code == 200
    assert taken.content.replace(b"taken@", b"?") == new.content.replace(b"fresh@", b"?")
    assert (
        "tried to sign up" in next(m for m in mail.outbox if m.to == ["taken@example.com"]).subject
    )
    assert get_user_model().objects.count() == 1


def test_without_verification_signed_in_at_once_unproven(site, client):
    site(verify=False)
    response = sign_up(client, "bea@example.com")
    assert response.status_code == 302
    user = get_user_model().objects.get()
    assert user.email_verified is None and user.check_password(PASSWORD)
    assert UnprovenEmail.objects.filter(user=user).exists()


def test_the_message_names_no_username(site, client, monkeypatch):
    seen = []
    real = flow.mail.message

    def message(name, context, *args, **kwargs):
        seen.append(context)
        return real(name, context, *args, **kwargs)

    monkeypatch.setattr(flow.mail, "message", message)
    sign_up(client, "ada@example.com")
    (context,) = seen
    assert context["username"] == "" and context["username_taken"] is False
