"""Sign-up with a password (webauth.passwords.signup): the page, the JSON route, the checks.

Both modes: ``verify_email`` (the default: nothing stored until the address is
proven by the email's code or link, in the browser that signed up) and
``verify_email=False`` (signed in at once, the address unproven). A taken
address or username gets the answer a new one gets, byte for byte, and its
owner an email; the form is hostile-input proof.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from freezegun import freeze_time

from webauth import jwt as jose
from webauth.conf import get_config
from webauth.models import UnprovenEmail, VerificationToken
from webauth.passwords import signup as flow
from webauth.passwords.forms import FIELD_MAX_LENGTH, SignupForm, signup_form_class
from webauth.providers import DjangoCredentials, Email

from .support.helpers import csrf_pair

pytestmark = pytest.mark.django_db
SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
PENDING = "authjs.signup-pending"
PASSWORD = "correct horse battery 9"


@pytest.fixture
def site(settings):
    def configure(signup=True, **options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "providers": ["webauth.providers.DjangoCredentials"],
            "passwords": {"signup": signup},
            **options,
        }

    configure()
    return configure


@pytest.fixture
def validators(settings):
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
        {
            "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
            "OPTIONS": {"min_length": 10},
        },
        {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
        {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    ]


@pytest.fixture
def ann(django_user_model):
    return django_user_model.objects.create_user("ann", email="ann@example.com", password="x-1")


def form(client, **fields):
    data = {
        "csrfToken": csrf_pair(client),
        "username": "bea",
        "email": "bea@example.com",
        "password1": PASSWORD,
        "password2": PASSWORD,
        **fields,
    }
    return {k: v for k, v in data.items() if v is not None}


def sign_up(client, **fields):
    response = client.post("/auth/signup", form(client, **fields))
    flow.wait_for_mail()
    return response


def message_parts(message):
    link = re.search(r"http://\S+/auth/signup\?\S+", message.body).group()
    code = re.search(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body).group()
    return link, code


def session_of(response):
    morsel = response.cookies.get(SESSION)
    if morsel is None or not morsel.value:
        return None
    return jose.decode(token=morsel.value, secret=SECRET, salt=SESSION)


# -- the page --------------------------------------------------------------------------------


def test_the_page_is_the_form_built_from_the_user_model(site, client):
    response = client.get("/auth/signup")
    assert response.status_code == 200
    html = response.content.decode()
    for name in ("username", "email", "password1", "password2", "csrfToken", "callbackUrl"):
        assert f'name="{name}"' in html
    assert 'autocomplete="new-password"' in html and 'autocomplete="email"' in html
    assert response["Cache-Control"] == "private, no-store"


def test_off_the_route_is_auth_js_400(site, client):
    site(signup=False)
    for response in (client.get("/auth/signup"), client.post("/auth/signup", {})):
        assert response.status_code == 400
        assert response.json() == "Bad request."


def test_without_django_credentials_the_route_is_off(site, client, settings):
    site()
    settings.WEBAUTH = {**settings.WEBAUTH, "providers": [Email()]}
    assert client.get("/auth/signup").status_code == 400


def test_the_url_name(site):
    from django.urls import reverse

    assert reverse("webauth:signup") == "/auth/signup"
    assert reverse("webauth:app-signup") == "/auth/app/signup"


# -- verify_email (the default) ---------------------------------------------------------


def test_a_new_address_gets_a_link_and_a_code_and_nothing_is_stored(site, client):
    response = sign_up(client, callbackUrl="/welcome/")
    assert response.status_code == 200
    assert "bea@example.com" in response.content.decode()
    assert PENDING in response.cookies
    assert not get_user_model().objects.filter(username="bea").exists()
    [message] = mail.outbox
    assert message.to == ["bea@example.com"]
    link, code = message_parts(message)
    assert "/auth/signup?token=" in link
    # The grant's identifier is the sign-up's own: no sign-in redeems it.
    assert VerificationToken.objects.get().identifier == "signup:bea@example.com"
    done = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert done.status_code == 302
    assert done["Location"] == "http://testserver/welcome/"
    claims = session_of(done)
    user = get_user_model().objects.get(username="bea")
    assert claims["sub"] == str(user.pk)
    assert user.email == "bea@example.com" and user.check_password(PASSWORD)
    assert not UnprovenEmail.objects.filter(user=user).exists()
    assert done.cookies[PENDING].value == ""  # forgotten
    assert VerificationToken.objects.count() == 0


def test_the_link_opens_a_confirmation_in_the_browser_that_signed_up(site, client, client_factory):
    sign_up(client)
    link, _code = message_parts(mail.outbox[0])
    path = link.removeprefix("http://testserver")
    # Another browser (a mail scanner) sees where to finish and uses up nothing.
    scanner = client_factory()
    elsewhere = scanner.get(path)
    assert elsewhere.status_code == 200
    assert b"Finish signing up where you started" in elsewhere.content
    assert VerificationToken.objects.count() == 1
    page = client.get(path)
    assert page.status_code == 200 and b'name="token"' in page.content
    assert page["Referrer-Policy"] == "no-referrer"
    token = parse_qs(urlsplit(link).query)["token"][0]
    # The scanner posting the token burns nothing either: it has no pending sign-up.
    scanner_post = scanner.post("/auth/signup", {"csrfToken": csrf_pair(scanner), "token": token})
    assert scanner_post.status_code == 400 and VerificationToken.objects.count() == 1
    done = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "token": token})
    assert done.status_code == 302 and session_of(done) is not None
    assert get_user_model().objects.filter(username="bea").count() == 1


def test_a_wrong_code_counts_and_the_right_one_still_works(site, client):
    sign_up(client)
    _link, code = message_parts(mail.outbox[0])
    wrong = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": "AAAA-AAAA"})
    assert wrong.status_code == 400
    assert b"attempts left" in wrong.content
    assert not get_user_model().objects.filter(username="bea").exists()
    done = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert done.status_code == 302


def test_the_code_is_bound_to_the_browser_that_signed_up(site, client, client_factory):
    sign_up(client)
    _link, code = message_parts(mail.outbox[0])
    other = client_factory()
    response = other.post("/auth/signup", {"csrfToken": csrf_pair(other), "code": code})
    assert response.status_code == 400
    assert b"expired" in response.content
    assert not get_user_model().objects.filter(username="bea").exists()


def test_a_code_cannot_be_used_twice(site, client):
    sign_up(client)
    _link, code = message_parts(mail.outbox[0])
    pending = client.cookies[PENDING].value
    assert (
        client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code}).status_code
        == 302
    )
    client.cookies[PENDING] = pending  # the cookie replayed
    again = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert again.status_code == 400
    assert get_user_model().objects.filter(username="bea").count() == 1


def test_an_address_taken_meanwhile_is_said_to_who_proved_it(site, client, django_user_model):
    sign_up(client)
    _link, code = message_parts(mail.outbox[0])
    django_user_model.objects.create_user("other", email="bea@example.com")
    response = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert response.status_code == 409
    assert b"exists already" in response.content
    assert django_user_model.objects.filter(email="bea@example.com").count() == 1


def test_a_username_taken_meanwhile_asks_for_another(site, client, django_user_model):
    sign_up(client)
    _link, code = message_parts(mail.outbox[0])
    django_user_model.objects.create_user("bea", email="someone@example.com")
    response = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert response.status_code == 409
    html = response.content.decode()
    assert "This username is taken" in html and 'value="bea@example.com"' in html
    assert django_user_model.objects.filter(username="bea").count() == 1


# -- never telling ---------------------------------------------------------------------------


def _answer(response, address=""):
    """What a response says, without the values that are random in every one.

    The page names the address it was given (the same for a new and a taken
    one): it is replaced by a placeholder so that answers to equally long
    addresses can be compared byte for byte.
    """
    cookies = tuple(
        sorted(
            (name, len(morsel.value), morsel["max-age"], morsel["path"], morsel["samesite"])
            for name, morsel in response.cookies.items()
        )
    )
    headers = tuple(sorted((k, v) for k, v in response.items() if k.lower() != "set-cookie"))
    body = response.content.replace(address.encode(), b"<address>") if address else response.content
    return response.status_code, body, headers, cookies


@pytest.mark.parametrize("verify", [True, False])
def test_taken_addresses_and_usernames_get_the_new_ones_answer(site, client, ann, verify):
    site(signup={"verify_email": verify})
    token = csrf_pair(client)

    def ask(username, email):
        data = {
            "csrfToken": token,
            "username": username,
            "email": email,
            "password1": PASSWORD,
            "password2": PASSWORD,
        }
        response = client.post("/auth/signup", data)
        flow.wait_for_mail()
        return response

    # Usernames and addresses of one length: the sealed sign-up in the cookie
    # has the same size, so the whole answers can be compared.
    # One clock for all: the pending cookie's Max-Age counts down to the grant's
    # expiry, and a second that ends between two requests (a busy machine) is no leak.
    cases = [("zed", "ann@example.com"), ("ann", "cid@example.com"), ("ann", "ann@example.com")]
    with freeze_time():
        answers = {_answer(ask(u, e), e) for u, e in cases}
        # With verify_email=False a new one cannot be hidden: it is signed in at
        # once (test_without_verification_...); the taken ones look all the same.
        if verify:
            answers.add(_answer(ask("dee", "dee@example.com"), "dee@example.com"))
    assert len(answers) == 1, answers
    assert {m.to[0] for m in mail.outbox} >= {"ann@example.com", "cid@example.com"}
    to_ann = [m for m in mail.outbox if m.to == ["ann@example.com"]]
    assert to_ann and all("tried to" in m.subject for m in to_ann)
    assert all(not re.search(r"[0-9A-Z]{4}-[0-9A-Z]{4}", m.body) for m in to_ann)
    to_cid = next(m for m in mail.outbox if m.to == ["cid@example.com"])
    assert "Choose another username" in to_cid.subject
    assert get_user_model().objects.count() == 1  # ann; dee waits for the code


def test_the_signup_event(site, client, ann):
    from webauth import signals

    seen = []

    def receiver(sender, **message):
        seen.append((message["user"], message["email"]))

    signals.signup.connect(receiver)
    try:
        sign_up(client, username="zed", email="ANN@example.com")
        sign_up(client)
        _link, code = message_parts(next(m for m in mail.outbox if m.to == ["bea@example.com"]))
        client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    finally:
        signals.signup.disconnect(receiver)
    user = get_user_model().objects.get(username="bea")
    assert seen == [(None, "ann@example.com"), (user, "bea@example.com")]


# -- verify_email=False ---------------------------------------------------------------------


def test_without_verification_the_user_is_signed_in_at_once_unproven(site, client):
    site(signup={"verify_email": False})
    response = sign_up(client)
    assert response.status_code == 302
    user = get_user_model().objects.get(username="bea")
    assert session_of(response)["sub"] == str(user.pk)
    assert UnprovenEmail.objects.filter(user=user).exists()
    assert user.email_verified if hasattr(user, "email_verified") else True
    assert mail.outbox == []
    # The password signs in.
    again = client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "bea", "password": PASSWORD},
    )
    assert again.status_code == 302 and "error" not in again["Location"]


def test_without_verification_a_taken_address_mails_its_owner(site, client, ann):
    site(signup={"verify_email": False})
    response = sign_up(client, email="ann@example.com")
    assert response.status_code == 200 and b"Check your email" in response.content
    assert PENDING not in response.cookies and session_of(response) is None
    assert [m.to for m in mail.outbox] == [["ann@example.com"]]


def test_without_verification_a_taken_address_reaches_no_sign_in_callback(site, client, ann):
    called = []
    site(
        signup={"verify_email": False},
        callbacks={"sign_in": lambda **kw: called.append(kw["user"].email) or True},
    )
    taken = sign_up(client, email="ann@example.com")
    assert taken.status_code == 200 and 'name="code"' not in taken.content.decode()
    assert called == []  # a taken address is never tried as a new user
    assert sign_up(client).status_code == 302
    assert called == ["bea@example.com"]


def test_the_answer_offers_a_code_only_when_one_was_sent(site, client, ann):
    assert 'id="webauth-signup-code"' in sign_up(client).content.decode()
    site(signup={"verify_email": False})
    assert (
        'id="webauth-signup-code"' not in sign_up(client, email="ann@example.com").content.decode()
    )


def test_signing_up_at_once_gives_the_django_session_a_new_key(site, client):
    from django.contrib.sessions.backends.db import SessionStore

    site(signup={"verify_email": False})
    planted = client.session
    planted["planted"] = "by someone"
    planted.save()
    old = client.cookies["sessionid"].value
    response = sign_up(client)
    assert response.status_code == 302
    new_key = response.cookies["sessionid"].value
    assert new_key and new_key != old and not SessionStore().exists(old)


@pytest.fixture
def a_race(monkeypatch):
    """The address and username checks find nothing: the insert is where a rival shows."""
    from webauth.adapters.django import DjangoAdapter

    monkeypatch.setattr(DjangoAdapter, "get_user_by_email", lambda self, email: None)
    monkeypatch.setattr(flow, "_username_taken", lambda model, username: False)


def _signup_events():
    from webauth import signals

    seen = []

    def receiver(sender, **message):
        seen.append((sender, message["user"], message["email"]))

    signals.signup.connect(receiver, weak=False)
    return seen, lambda: signals.signup.disconnect(receiver)


def test_an_address_taken_at_the_insert_is_answered_as_taken(site, client, ann, a_race):
    site(signup={"verify_email": False})
    seen, done = _signup_events()
    try:
        response = sign_up(client, email="ann@example.com")
    finally:
        done()
    assert response.status_code == 200 and b"Check your email" in response.content
    assert 'id="webauth-signup-code"' not in response.content.decode()
    assert PENDING not in response.cookies and session_of(response) is None
    (message,) = mail.outbox
    assert message.to == ["ann@example.com"] and "tried to sign up" in message.subject
    assert seen == [("credentials", None, "ann@example.com")]
    assert not get_user_model().objects.filter(username="bea").exists()


def test_a_username_taken_at_the_insert_is_answered_as_taken(site, client, ann, a_race):
    site(signup={"verify_email": False})
    response = sign_up(client, username="ann", email="new@example.com")
    assert response.status_code == 200 and session_of(response) is None
    (message,) = mail.outbox
    assert message.to == ["new@example.com"] and "Choose another username" in message.subject
    assert not get_user_model().objects.filter(email="new@example.com").exists()


def test_the_password_providers_id_is_the_sign_ups(site, client):
    site(signup={"verify_email": False}, providers=[DjangoCredentials(id="passwords")])
    seen, done = _signup_events()
    try:
        assert sign_up(client).status_code == 302
    finally:
        done()
    user = get_user_model().objects.get(username="bea")
    assert seen == [("passwords", user, "bea@example.com")]


def test_the_pending_sign_up_binds_the_browser_to_a_grant_of_whole_seconds(site, client):
    response = sign_up(client)
    held = flow.unseal(get_config(), response.cookies[PENDING].value, PENDING)
    assert len(held.binding) == 43  # 32 random bytes, URL-safe
    (row,) = VerificationToken.objects.all()
    assert row.expires.timestamp() == held.expires  # the second the cookie says, exactly


def test_the_messages_context(site, client, ann, monkeypatch):
    from dataclasses import asdict

    seen = []
    real = flow.mail.message

    def message(name, context, *args, **kwargs):
        seen.append((name, context))
        return real(name, context, *args, **kwargs)

    monkeypatch.setattr(flow.mail, "message", message)
    sign_up(client)
    sign_up(client, username="zed", email="ann@example.com")
    sign_up(client, username="ann", email="new@example.com")
    (new_name, new), (taken_name, taken), (name_name, name) = seen
    assert (new_name, taken_name, name_name) == ("signup", "signup_taken", "signup")
    assert new["host"] == "testserver" and new["url"].startswith("http://testserver/auth/signup?")
    assert new["minutes"] == 60 and re.fullmatch(r"[0-9A-Z]{4}-[0-9A-Z]{4}", new["code"])
    assert new["signin_url"] == "http://testserver/auth/signin"
    assert new["signup_url"] == "http://testserver/auth/signup"
    assert (new["username"], new["username_taken"], new["verify"]) == ("bea", False, True)
    assert new["theme"] == asdict(get_config().theme)
    assert taken["username"] == "zed" and taken["username_taken"] is False
    assert (name["username"], name["username_taken"]) == ("ann", True)
    seen.clear()
    site(signup={"verify_email": False})
    sign_up(client, email="ann@example.com")
    ((_, unverified),) = seen
    assert unverified["verify"] is False
    # The minutes the grant lasts, rounded up, never fewer than one.
    for max_age, minutes in ((61, 2), (30, 1), (120, 2)):
        seen.clear()
        site(providers=[DjangoCredentials(), Email(from_email="x@example.com", max_age=max_age)])
        sign_up(client, email=f"m{max_age}@example.com", username=f"m{max_age}")
        ((_, context),) = seen
        assert context["minutes"] == minutes, max_age


def test_the_message_comes_from_the_email_providers_sender(site, client, settings):
    settings.DEFAULT_FROM_EMAIL = "webmaster@example.com"
    site(providers=[DjangoCredentials(), Email(from_email="Example <no-reply@example.com>")])
    sign_up(client, email="from@example.com", username="from")
    assert [m.from_email for m in mail.outbox] == ["Example <no-reply@example.com>"]
    mail.outbox.clear()
    site()  # no email provider of its own: Django's DEFAULT_FROM_EMAIL
    sign_up(client, email="default@example.com", username="default")
    assert [m.from_email for m in mail.outbox] == ["webmaster@example.com"]


def test_the_sign_in_callback_sees_the_new_user_and_its_account(site, client):
    seen = []
    site(
        signup={"verify_email": False},
        callbacks={"sign_in": lambda **kw: seen.append((kw["user"], kw["account"])) or True},
    )
    assert sign_up(client).status_code == 302
    ((user, account),) = seen
    assert user.email == "bea@example.com" and user.id  # a stand-in: the user is not made yet
    assert account == {
        "providerAccountId": user.id,
        "type": "credentials",
        "provider": "credentials",
    }


def test_a_proven_sign_up_gives_the_django_session_a_new_key(site, client):
    from django.contrib.sessions.backends.db import SessionStore

    sign_up(client)
    _link, code = message_parts(mail.outbox[0])
    planted = client.session
    planted["planted"] = "by someone"
    planted.save()
    old = client.cookies["sessionid"].value
    done = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert done.status_code == 302
    assert done.cookies["sessionid"].value != old and not SessionStore().exists(old)
    # A password sign-up: the session says so.
    assert session_of(done)["amr"] == ["pwd"]


def test_a_sign_up_sends_create_user_and_signup_with_the_request(site, client):
    from webauth import signals

    seen = []

    def receiver(signal):
        def receive(sender, **message):
            seen.append((signal, sender, message["request"].path, message["user"].email))

        return receive

    receivers = [receiver("create_user"), receiver("signup")]
    signals.user_created.connect(receivers[0], weak=False)
    signals.signup.connect(receivers[1], weak=False)
    try:
        site(signup={"verify_email": False})
        sign_up(client)
    finally:
        signals.user_created.disconnect(receivers[0])
        signals.signup.disconnect(receivers[1])
    assert seen == [
        ("create_user", "credentials", "/auth/signup", "bea@example.com"),
        ("signup", "credentials", "/auth/signup", "bea@example.com"),
    ]


def test_a_new_user_lands_on_the_new_user_page(site, client):
    site(signup={"verify_email": False}, pages={"new_user": "/welcome/"})
    response = sign_up(client, callbackUrl="/after/")
    assert response.status_code == 302
    assert response["Location"] == "/welcome/?callbackUrl=http%3A%2F%2Ftestserver%2Fafter%2F"


# -- the form --------------------------------------------------------------------------------


def test_the_password_validators_apply(site, client, validators):
    response = sign_up(client, password1="bea12345", password2="bea12345")
    assert response.status_code == 400
    html = response.content.decode()
    assert "too short" in html and 'aria-invalid="true"' in html
    assert mail.outbox == [] and VerificationToken.objects.count() == 0


def test_the_passwords_must_match(site, client):
    response = sign_up(client, password2=PASSWORD + "!")
    assert response.status_code == 400 and b"didn" in response.content


def test_an_address_is_required_and_must_be_one(site, client):
    for email in (None, "", "not-an-address", "a@b@c"):
        response = sign_up(client, email=email)
        assert response.status_code == 400, email
    assert mail.outbox == []


def test_the_address_is_stored_canonical(site, client):
    sign_up(client, email="Bea@EXAMPLE.com")
    _link, code = message_parts(mail.outbox[0])
    client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert get_user_model().objects.get(username="bea").email == "bea@example.com"


def test_an_address_the_form_takes_but_webauth_refuses_is_a_field_error(site, client):
    # Django's EmailField takes a 65-character local part; an address webauth
    # stores cannot have one (RFC 5321: 64 at most).
    address = "b" * 65 + "@example.com"
    response = sign_up(client, email=address)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'aria-invalid="true"' in html and "Enter a valid email address" in html
    assert mail.outbox == [] and VerificationToken.objects.count() == 0


def test_an_address_two_users_hold_is_taken(site, client, ann, django_user_model):
    django_user_model.objects.create_user("ann2", email="ann@example.com", password="x-2")
    response = sign_up(client, email="ann@example.com")
    assert response.status_code == 200 and b"Check your email" in response.content
    assert not django_user_model.objects.filter(username="bea").exists()
    (message,) = mail.outbox
    assert message.to == ["ann@example.com"] and "tried to sign up" in message.subject


def test_the_form_tells_nothing_of_taken_usernames(site, ann):
    bound = signup_form_class(None)(
        data={
            "username": "ann",
            "email": "x@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        }
    )
    assert bound.is_valid(), bound.errors


def test_a_project_form_by_dotted_path(site, client):
    site(signup={"form": "tests.test_passwords_signup.TermsForm"})
    page = client.get("/auth/signup")
    assert b'name="first_name"' in page.content and b'name="terms"' in page.content
    refused = sign_up(client, first_name="Bea")
    assert refused.status_code == 400
    sign_up(client, first_name="Bea", terms="on")
    _link, code = message_parts(mail.outbox[0])
    client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert get_user_model().objects.get(username="bea").first_name == "Bea"


class TermsForm(SignupForm):
    """A project's form: a name, and terms to accept."""

    from django import forms as _forms

    terms = _forms.BooleanField(label="I accept the terms")

    class Meta(SignupForm.Meta):
        model = get_user_model()
        fields = ("username", "email", "first_name")


# -- hostile input ---------------------------------------------------------------------------


def test_without_csrf_nothing_happens(site, client):
    data = form(client)
    for token in (None, "", "forged", data["csrfToken"] + "x"):
        response = client.post(
            "/auth/signup",
            {**data, "csrfToken": token}
            if token is not None
            else {k: v for k, v in data.items() if k != "csrfToken"},
        )
        assert response.status_code == 302
        assert "error=MissingCSRF" in response["Location"]
    assert mail.outbox == [] and VerificationToken.objects.count() == 0


def test_a_csrf_token_from_another_browser_is_refused(site, client, client_factory):
    other = client_factory()
    response = client.post("/auth/signup", {**form(client), "csrfToken": csrf_pair(other)})
    assert response.status_code == 302 and "MissingCSRF" in response["Location"]


@pytest.mark.parametrize(
    "fields",
    [
        {"username": "x" * (FIELD_MAX_LENGTH + 1)},
        {"password1": "p" * 100_000, "password2": "p" * 100_000},
        {"email": ("a" * 5000) + "@example.com"},
        {"username": "bob\x00"},
        {"username": "<script>alert(1)</script>"},
    ],
)
def test_oversized_and_odd_values_are_field_errors(site, client, fields):
    response = sign_up(client, **fields)
    assert response.status_code == 400
    assert b"<script>alert" not in response.content
    assert mail.outbox == []


def test_json_with_wrong_types_is_a_form_error_not_a_500(site, client):
    token = csrf_pair(client)
    body = {
        "csrfToken": token,
        "username": ["bea"],
        "email": {"a": 1},
        "password1": 5,
        "password2": None,
    }
    response = client.post("/auth/signup", json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert mail.outbox == []


def test_repeated_fields_take_one_value(site, client):
    data = form(client)
    data["email"] = ["bea@example.com", "ann@example.com"]
    response = client.post("/auth/signup", data)
    flow.wait_for_mail()
    assert response.status_code in (200, 400)
    assert len(mail.outbox) <= 1


@pytest.mark.parametrize(
    "callback",
    [
        "https://evil.example/",
        "//evil.example/",
        "javascript:alert(1)",
        "/\\evil.example",
        "http:evil.example",
    ],
)
def test_callback_url_cannot_leave_the_site(site, client, callback):
    site(signup={"verify_email": False})
    response = sign_up(client, callbackUrl=callback)
    assert response.status_code == 302
    assert urlsplit(response["Location"]).netloc == "testserver"


def test_callback_url_is_kept_through_verification_and_checked(site, client):
    sign_up(client, callbackUrl="https://evil.example/steal")
    _link, code = message_parts(mail.outbox[0])
    done = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert done["Location"] == "http://testserver"


def test_a_tampered_pending_cookie_is_no_sign_up(site, client):
    sign_up(client)
    _link, code = message_parts(mail.outbox[0])
    value = client.cookies[PENDING].value
    client.cookies[PENDING] = value[:-4] + ("AAAA" if not value.endswith("AAAA") else "BBBB")
    response = client.post("/auth/signup", {"csrfToken": csrf_pair(client), "code": code})
    assert response.status_code == 400
    assert not get_user_model().objects.filter(username="bea").exists()


def test_the_rate_limit_counts_per_address(site, client, ann, caplog):
    site(rate_limits={"signup": "100/m/ip,2/h/key"})
    first = sign_up(client, username="u1")
    second = sign_up(client, username="u2")
    third = sign_up(client, username="u3")
    assert (first.status_code, second.status_code, third.status_code) == (200, 200, 429)
    assert "Retry-After" in third
    assert "[RateLimited] Too many sign-ups. Read more" in caplog.text  # what the log says
    other = sign_up(client, username="u4", email="other@example.com")
    assert other.status_code == 200
    # Taken or not, the same count.
    for n in range(2):
        assert sign_up(client, username=f"t{n}", email="ann@example.com").status_code == 200
    assert sign_up(client, username="t3", email="ann@example.com").status_code == 429


def test_the_rate_limit_counts_per_client(site, client):
    site(rate_limits={"signup": "2/m/ip,100/h/key"})
    statuses = [
        sign_up(client, username=f"u{n}", email=f"u{n}@example.com").status_code for n in range(3)
    ]
    assert statuses == [200, 200, 429]


# -- the app route ---------------------------------------------------------------------------


def _app(client, body):
    response = client.post("/auth/app/signup", json.dumps(body), content_type="application/json")
    flow.wait_for_mail()
    return response


APP_FORM = {
    "username": "bea",
    "email": "bea@example.com",
    "password1": PASSWORD,
    "password2": PASSWORD,
}


def test_the_app_route_signs_up_with_the_code(site, client, ann):
    site(bearer=True)
    asked = _app(client, APP_FORM)
    assert asked.status_code == 200
    answer = asked.json()
    assert answer["step"] == "verify_email" and answer["expiresIn"] > 0
    assert not asked.cookies
    _link, code = message_parts(mail.outbox[0])
    wrong = _app(client, {"signupToken": answer["signupToken"], "code": "AAAA-AAAA"})
    assert wrong.status_code == 401 and wrong.json() == {"error": "Verification"}
    done = _app(client, {"signupToken": answer["signupToken"], "code": code})
    assert done.status_code == 200
    assert done.json()["sessionToken"] and get_user_model().objects.filter(username="bea").exists()
    # Taken: the same answer's shape and size.
    taken = _app(client, {**APP_FORM, "username": "zed", "email": "ann@example.com"})
    assert taken.status_code == 200
    assert taken.json().keys() == answer.keys()
    assert len(taken.json()["signupToken"]) == len(answer["signupToken"])


def test_the_app_route_form_errors(site, client):
    site(bearer=True)
    response = _app(client, {**APP_FORM, "password2": "other"})
    assert response.status_code == 400
    assert response.json()["error"] == "InvalidRequest" and "password2" in response.json()["fields"]
    assert _app(client, []).status_code == 400
    bad = client.post("/auth/app/signup", "not json", content_type="application/json")
    assert bad.status_code == 400
    assert client.get("/auth/app/signup").status_code == 405


def test_the_app_route_needs_bearer_and_signup(site, client):
    assert _app(client, APP_FORM).status_code == 404
    site(signup=False, bearer=True)
    assert _app(client, APP_FORM).status_code == 404


def test_the_app_route_without_verification_answers_the_token(site, client):
    site(bearer=True, signup={"verify_email": False})
    response = _app(client, APP_FORM)
    assert response.status_code == 200 and response.json()["sessionToken"]


def test_a_browser_cookie_is_no_app_token(site, client):
    site(bearer=True)
    sign_up(client)
    _link, code = message_parts(mail.outbox[0])
    cookie = client.cookies[PENDING].value
    response = _app(client, {"signupToken": cookie, "code": code})
    assert response.status_code == 401


# -- start-up checks --------------------------------------------------------------------------


def _ids(settings):
    from webauth.checks import check_config

    return [m.id for m in check_config()]


def test_check_without_django_credentials(site, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "providers": [Email()]}
    assert "webauth.E015" in _ids(settings)


def test_check_a_form_that_does_not_import(site, settings):
    site(signup={"form": "tests.nowhere.Form"})
    assert "webauth.E015" in _ids(settings)
    site(signup={"form": "tests.test_passwords_signup.PASSWORD"})
    assert "webauth.E015" in _ids(settings)
    site(signup={"form": "tests.test_passwords_signup.TermsForm"})
    assert "webauth.E015" not in _ids(settings)


def test_check_on_is_quiet_when_all_is_there(site, settings):
    assert "webauth.E015" not in _ids(settings)


def test_check_an_adapter_without_the_methods(site, settings):
    site()
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": "tests.test_passwords_signup.Partial"}
    assert "webauth.E015" in _ids(settings)


class Partial:
    """An adapter with only users."""

    def get_user(self, id):
        return None

    def get_user_by_email(self, email):
        return None

    def create_user(self, user):
        return user


# -- other user models -----------------------------------------------------------------------


def test_sign_up_with_webauths_user_model():
    """``webauth.User`` (USERNAME_FIELD is the address): in a subprocess, as in test_models_user."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.support.settings_user_model"}
    # The child loads its plugins itself (the mutation script turns autoloading off).
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/support/signup_user_model_flows.py",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
