"""Changing and setting a password in the account center (webauth.passwords.change).

The functions (Django's forms and validators, the ``password_change`` limit, the
compare-and-set of the hash, what follows), then the page (the Password tab,
re-authentication, post/redirect/get, the other browsers signed out and this
one kept under both strategies), the template tag, the last way in, hostile
input (oversized, wrong types, CSRF, ``next``) and races (run on PostgreSQL and
MariaDB too: WEBAUTH_TEST_POSTGRES=1 / WEBAUTH_TEST_MARIADB=1).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html import unescape
from types import SimpleNamespace
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.http import HttpResponse
from django.template import engines
from django.test import Client, RequestFactory
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import ensure_csrf_cookie

from webauth import signals
from webauth.middleware import AuthMiddleware
from webauth.models import Account, Authenticator, Session, TrustedBrowser
from webauth.passwords import change
from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.catalog.github import GitHub
from webauth.test import force_sign_in
from webauth.testing.extensions import race

from .support.urls import urlpatterns as base_patterns

pytestmark = pytest.mark.django_db

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
NEW = "a brand new passphrase 7"
COOKIE = "authjs.session-token"
PAGE = "/account/password/"
VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
WRONG = "That is not your current password. Enter it again."
MISMATCH = "The two password fields didn’t match."
LIMITED = "Too many attempts. Please wait a few minutes before you try again."
STALE = "Your password has changed since this page was opened. Try again."
CHANGED = "Your password was changed. Every other device was signed out."
SET = "Your password was set. Every other device was signed out."

TAG_PAGE = "{% load webauth %}<main><h1>Settings</h1>{% webauth_account_password %}</main>"


def project_settings_page(request):
    """A project's own page with the Password section's tag."""
    return HttpResponse(engines["django"].from_string(TAG_PAGE).render({}, request))


urlpatterns = [
    *base_patterns,
    path("settings/", project_settings_page),
    path("csrf-cookie/", ensure_csrf_cookie(lambda request: HttpResponse())),
]


@pytest.fixture
def site(settings):
    def configure(strategy="database", change=True, providers=None, **options):
        settings.ROOT_URLCONF = __name__
        settings.AUTH_PASSWORD_VALIDATORS = VALIDATORS
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
            "providers": providers
            or [DjangoCredentials(), Email(from_email="Example <no-reply@example.com>")],
            "passwords": {"change": change},
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )


@pytest.fixture
def ann(db):
    """A user without a password (as an email sign-in, a passkey or OAuth makes one)."""
    return get_user_model().objects.create_user("ann", email="ann@example.com")


def reloaded(user):
    return get_user_model().objects.get(pk=user.pk)


def request_of(client, data=None, ip="203.0.113.9"):
    """A POST as *client*'s browser makes it, through the middleware."""
    request = RequestFactory().post("/", data or {}, HTTP_HOST="testserver", REMOTE_ADDR=ip)
    if COOKIE in client.cookies:
        request.COOKIES[COOKIE] = client.cookies[COOKIE].value
    AuthMiddleware(lambda r: HttpResponse())(request)
    return request


def signed_in_request(user, ip="203.0.113.9"):
    client = Client()
    force_sign_in(client, user)
    return request_of(client, ip=ip)


def signed_in(client):
    return client.get("/auth/session").json() is not None


class Browser:
    """One browser: a test client that enforces Django's CSRF check, as a real one faces."""

    def __init__(self):
        self.client = Client(enforce_csrf_checks=True)

    def sign_in(self, username="alice", password=PASSWORD):
        token = self.client.get("/auth/csrf").json()["csrfToken"]
        response = self.client.post(
            "/auth/callback/credentials",
            {"csrfToken": token, "username": username, "password": password},
        )
        assert response.status_code == 302, response.content
        return self

    def forced(self, user):
        force_sign_in(self.client, user)
        return self

    def get(self, url, **kwargs):
        return self.client.get(url, **kwargs)

    def post(self, url, data, *, csrf=True, **kwargs):
        if "csrftoken" not in self.client.cookies:
            self.client.get("/csrf-cookie/")  # as the page with the form set it
        if csrf:
            data = {**data, "csrfmiddlewaretoken": self.client.cookies["csrftoken"].value}
        return self.client.post(url, data, **kwargs)

    def change(self, current=PASSWORD, new1=NEW, new2=None, **extra):
        data = {"op": "change", "old_password": current, "new_password1": new1}
        data["new_password2"] = new1 if new2 is None else new2
        return self.post(PAGE, {**data, **extra})

    def set(self, new1=NEW, new2=None, **extra):
        data = {"op": "set", "new_password1": new1, "new_password2": new1 if new2 is None else new2}
        return self.post(PAGE, {**data, **extra})

    def page(self, url=PAGE):
        response = self.get(url)
        assert response.status_code == 200, response
        return response.content.decode()

    def signed_in(self):
        return self.client.get("/auth/session").json() is not None


def announced(html):
    """The outcomes on a page: [(role, text)]."""
    return [
        (role, unescape(text).strip())
        for role, text in re.findall(
            r'<div class="webauth-(?:notice|error)" role="(status|alert)">([^<]*)</div>', html
        )
    ]


def field_errors(html):
    """Each field's errors on the page: {input id: [messages]}."""
    found = {}
    for field_id, body in re.findall(
        r'<div class="webauth-error webauth-field-error" role="alert" '
        r'id="(webauth-password-\w+)-error">(.*?)</div>',
        html,
    ):
        found[field_id] = [unescape(m) for m in re.findall(r"<p>(.*?)</p>", body)]
    return found


def make_stale():
    Session.objects.update(created_at=timezone.now() - timedelta(hours=1))


# -- the functions -------------------------------------------------------------------------


def test_available_needs_the_switch_a_django_credentials_provider_and_a_password_field(
    site, settings
):
    assert change.available()
    site(change=False)
    assert not change.available()
    site(providers=[Email(from_email="x@example.com"), GitHub(client_id="a", client_secret="b")])
    assert not change.available()

    class ProjectCredentials(DjangoCredentials):
        pass

    site(providers=[ProjectCredentials()])
    assert change.available()
    # A configuration given is the one asked, not the site's.
    from dataclasses import replace

    from webauth.conf import get_config
    from webauth.conf.options import PasswordOptions

    assert not change.available(replace(get_config(), passwords=PasswordOptions(change=False)))
    assert change._model_has_password(get_user_model())
    assert not change._model_has_password(Account)  # no password column


def test_available_needs_a_user_model_with_a_password(site, monkeypatch):
    assert change.available()
    monkeypatch.setattr(change, "get_user_model", lambda: Account)
    assert not change.available()


def _model(fields, **methods):
    """A stand-in model class: its concrete fields' names, and its attributes."""
    meta = SimpleNamespace(concrete_fields=[SimpleNamespace(name=name) for name in fields])
    return type("Model", (), {"_meta": meta, **methods})


def test_a_user_model_keeps_a_password_with_the_field_and_the_methods():
    methods = {
        name: lambda self, *a: True
        for name in ("set_password", "check_password", "has_usable_password")
    }
    assert change._model_has_password(_model(["password"], **methods))
    assert change._model_has_password(_model(["id", "password", "email"], **methods))
    assert not change._model_has_password(_model(["id", "email"], **methods))
    assert not change._model_has_password(_model(["password"]))
    for missing in methods:
        rest = {name: m for name, m in methods.items() if name != missing}
        assert not change._model_has_password(_model(["password"], **rest)), missing
        assert not change._model_has_password(_model(["password"], **rest, **{missing: "x"}))


def test_a_change_saves_the_new_password_and_ends_the_old_one(site, alice):
    seen = []
    signals.password_changed.connect(receiver := lambda sender, **kw: seen.append(kw))
    try:
        result = change.change_password(signed_in_request(alice), alice, PASSWORD, NEW, NEW)
    finally:
        signals.password_changed.disconnect(receiver)
    assert result.done and result.how == "change" and not result.errors
    assert result.token is None  # a browser's session: the cookie, not a token
    stored = reloaded(alice)
    assert stored.check_password(NEW) and not stored.check_password(PASSWORD)
    [event] = seen
    assert event["how"] == "change" and event["user"].pk == alice.pk
    [message] = mail.outbox
    assert message.to == ["alice@example.com"]
    assert "Your password was changed" in message.subject


def test_a_wrong_current_password_is_a_field_error_and_nothing_changes(site, alice):
    result = change.change_password(signed_in_request(alice), alice, "not it", NEW, NEW)
    assert not result.done and not result.limited and not result.stale
    assert result.errors == {"old_password": (WRONG,)}
    assert reloaded(alice).check_password(PASSWORD)
    assert mail.outbox == []


def test_the_validators_refuse_on_the_first_new_field(site, alice):
    request = signed_in_request(alice)
    result = change.change_password(request, alice, PASSWORD, "alice1", "alice1")
    assert set(result.errors) == {"new_password1"}
    text = " ".join(result.errors["new_password1"])
    assert "too short" in text and "too similar" in text
    assert change.change_password(request, alice, PASSWORD, "12345678901", "12345678901").errors[
        "new_password1"
    ] == ("This password is too common.", "This password is entirely numeric.")
    # Two different passwords: that alone is said, on the second field.
    assert change.change_password(request, alice, PASSWORD, "1", NEW).errors == {
        "new_password2": (MISMATCH,)
    }
    assert reloaded(alice).check_password(PASSWORD)


def test_the_forms_are_djangos(site, alice):
    assert issubclass(change.ChangeForm, __import__("django").contrib.auth.forms.PasswordChangeForm)
    assert issubclass(change.SetForm, __import__("django").contrib.auth.forms.SetPasswordForm)
    form = change.ChangeForm(alice)
    assert list(form.fields) == ["old_password", "new_password1", "new_password2"]
    assert all(f.max_length == change.MAX_PASSWORD_LENGTH for f in form.fields.values())
    assert "autofocus" not in form.fields["old_password"].widget.attrs


def test_every_wrong_current_password_counts_and_a_right_one_is_given_back(site, alice, settings):
    request = signed_in_request(alice)
    # The default rule: 5 per 5 minutes per user. A right current password gives
    # its attempt back, even when the new one is refused.
    for _ in range(4):
        assert change.change_password(request, alice, "wrong", NEW, NEW).errors
    for _ in range(3):
        refused = change.change_password(request, alice, PASSWORD, "short", "short")
        assert set(refused.errors) == {"new_password1"}
    assert change.change_password(request, alice, "wrong", NEW, NEW).errors  # the fifth
    limited = change.change_password(request, alice, PASSWORD, NEW, NEW)
    assert limited.limited and not limited.done and limited.retry_after > 0
    assert reloaded(alice).check_password(PASSWORD)  # refused unchecked, even right


def test_the_limit_is_per_user_and_per_address(site, alice, ann):
    bob = get_user_model().objects.create_user("bob", password=PASSWORD)
    for _ in range(5):
        change.change_password(signed_in_request(alice), alice, "wrong", NEW, NEW)
    assert change.change_password(signed_in_request(alice), alice, PASSWORD, NEW, NEW).limited
    # Another user from elsewhere is not refused by alice's count ...
    assert change.change_password(
        signed_in_request(bob, ip="198.51.100.7"), bob, PASSWORD, NEW, NEW
    ).done
    # ... but one address is refused after 10 wrong ones a minute, whoever the users are.
    users = [get_user_model().objects.create_user(f"u{n}", password=PASSWORD) for n in range(11)]
    for n, user in enumerate(users[:10]):
        request = signed_in_request(user, ip="192.0.2.1")
        assert change.change_password(request, user, "wrong", NEW, NEW).errors, n
    last = users[10]
    assert change.change_password(
        signed_in_request(last, ip="192.0.2.1"), last, PASSWORD, NEW, NEW
    ).limited
    assert change.change_password(
        signed_in_request(last, ip="192.0.2.2"), last, PASSWORD, NEW, NEW
    ).done


def test_the_configured_rule_applies(site, alice):
    site(rate_limits={"password_change": "100/m/ip,1/h/key"})
    request = signed_in_request(alice)
    assert change.change_password(request, alice, "wrong", NEW, NEW).errors
    assert change.change_password(request, alice, PASSWORD, NEW, NEW).limited


def test_a_set_gives_a_user_without_a_password_one(site, ann):
    assert not ann.has_usable_password()
    seen = []
    signals.password_changed.connect(receiver := lambda sender, **kw: seen.append(kw["how"]))
    try:
        result = change.set_password(signed_in_request(ann), ann, NEW, NEW)
    finally:
        signals.password_changed.disconnect(receiver)
    assert result.done and result.how == "set"
    assert reloaded(ann).check_password(NEW)
    assert seen == ["set"]
    [message] = mail.outbox
    assert "A password was set for your account." in message.body


def test_a_set_is_refused_for_a_user_who_has_a_password(site, alice, ann):
    result = change.set_password(signed_in_request(alice), alice, NEW, NEW)
    assert result.stale and not result.done
    assert reloaded(alice).check_password(PASSWORD)
    # And a change for a user who has none.
    assert change.change_password(signed_in_request(ann), ann, "", NEW, NEW).stale
    assert not reloaded(ann).has_usable_password()


def test_the_stored_password_decides_not_the_instance(site, alice):
    request = signed_in_request(alice)
    stale_instance = reloaded(alice)
    alice.set_password("changed elsewhere 5")
    alice.save()
    # The instance still holds the old hash; the database is what is checked.
    assert change.change_password(request, stale_instance, PASSWORD, NEW, NEW).errors == {
        "old_password": (WRONG,)
    }
    assert change.set_password(request, stale_instance, NEW, NEW).stale
    alice.delete()
    assert change.change_password(request, stale_instance, PASSWORD, NEW, NEW).stale


def test_the_hash_is_written_only_over_the_one_checked(site, alice):
    # Between the check and the write, another change: the write finds nothing to replace.
    request = signed_in_request(alice)
    stored = reloaded(alice)
    checked = stored.password
    other = reloaded(alice)
    other.set_password("won the race 42")
    other.save()
    result = change._save(request, stored, checked, NEW, "change")
    assert result.stale and not result.done
    assert reloaded(alice).check_password("won the race 42")
    assert mail.outbox == []  # nothing followed


def test_a_set_that_is_refused_still_counts_and_a_saved_one_is_given_back(site, ann):
    site(rate_limits={"password_change": "100/m/ip,2/h/key"})
    request = signed_in_request(ann)
    assert change.set_password(request, ann, "short", "short").errors
    assert change.set_password(request, ann, NEW, NEW).done  # the second: given back
    bob = get_user_model().objects.create_user("bob")
    other = signed_in_request(bob)
    assert change.set_password(other, bob, "short", "short").errors
    assert change.set_password(other, bob, "short", "short").errors
    assert change.set_password(other, bob, NEW, NEW).limited


def test_the_validators_see_the_user_and_hear_of_the_change(site, ann, settings):
    settings.AUTH_PASSWORD_VALIDATORS = [
        *VALIDATORS,
        {"NAME": "tests.test_passwords_change.Remembering"},
    ]
    Remembering.changed.clear()
    assert change.set_password(signed_in_request(ann), ann, "ann@example", "ann@example").errors
    assert change.set_password(signed_in_request(ann), ann, NEW, NEW).done
    assert Remembering.changed == [("ann", NEW)]


class Remembering:
    """A validator that remembers password_changed(), as a history validator would."""

    changed: list = []

    def validate(self, password, user=None):
        return None

    def password_changed(self, password, user=None):
        Remembering.changed.append((user.get_username(), password))

    def get_help_text(self):
        return "Remembered."


def test_a_saved_password_is_told_to_the_validators_once(site, ann, settings):
    # A receiver that saves the user it is given (to stamp a field, say) must not
    # make the validators hear of the same change a second time.
    settings.AUTH_PASSWORD_VALIDATORS = [{"NAME": "tests.test_passwords_change.Remembering"}]
    Remembering.changed.clear()
    signals.password_changed.connect(receiver := lambda sender, user, **kw: user.save())
    try:
        assert change.set_password(signed_in_request(ann), ann, NEW, NEW).done
    finally:
        signals.password_changed.disconnect(receiver)
    assert Remembering.changed == [("ann", NEW)]


def test_has_password_is_a_usable_password_and_nothing_else(site, alice, ann):
    assert change.has_password(alice) is True
    assert change.has_password(ann) is False
    # No such method, or one that is not callable: no password to change.
    assert change.has_password(object()) is False
    assert change.has_password(SimpleNamespace(has_usable_password=True)) is False


@pytest.mark.parametrize("form_class", [change.ChangeForm, change.SetForm])
def test_every_field_is_bounded_in_the_page_too(site, alice, form_class):
    form = form_class(alice)
    for name, form_field in form.fields.items():
        assert form_field.max_length == change.MAX_PASSWORD_LENGTH, name
        assert form_field.widget.attrs["maxlength"] == str(change.MAX_PASSWORD_LENGTH), name
        assert f'maxlength="{change.MAX_PASSWORD_LENGTH}"' in str(form[name]), name


def test_an_oversized_first_password_is_refused_before_any_validator(site, ann, settings):
    settings.AUTH_PASSWORD_VALIDATORS = [{"NAME": "tests.test_passwords_change.Remembering"}]
    big = "x" * (change.MAX_PASSWORD_LENGTH + 1)
    result = change.set_password(signed_in_request(ann), ann, big, big)
    assert set(result.errors) == {"new_password1", "new_password2"}
    assert all("at most 4096" in m[0] for m in result.errors.values())
    assert not reloaded(ann).has_usable_password()


def test_two_different_passwords_are_not_checked_against_the_validators(site, alice, ann):
    # The mismatch is said alone: the validators would refuse "password" too.
    for result in (
        change.change_password(signed_in_request(alice), alice, PASSWORD, "password", NEW),
        change.set_password(signed_in_request(ann), ann, "password", NEW),
    ):
        assert result.errors == {"new_password2": (MISMATCH,)}


def test_each_result_says_what_it_was_for(site, alice, ann):
    request, other = signed_in_request(alice), signed_in_request(ann)
    # Refused as stale: a change for a user without a password, a set for one with.
    for result, how in (
        (change.change_password(other, ann, "", NEW, NEW), "change"),
        (change.set_password(request, alice, NEW, NEW), "set"),
    ):
        assert (result.done, result.how, result.stale, result.limited) == (False, how, True, False)
        assert (result.errors, result.retry_after, result.token) == ({}, 0, None)
    # Refused by the validators.
    for result, how in (
        (change.change_password(request, alice, PASSWORD, "short", "short"), "change"),
        (change.set_password(other, ann, "short", "short"), "set"),
    ):
        assert (result.done, result.how, result.stale, result.limited) == (False, how, False, False)
        assert set(result.errors) == {"new_password1"} and result.retry_after == 0
    # Saved.
    for result, how in (
        (change.change_password(request, alice, PASSWORD, NEW, NEW), "change"),
        (change.set_password(other, ann, NEW, NEW), "set"),
    ):
        assert (result.done, result.how, result.stale, result.limited) == (True, how, False, False)
        assert (result.errors, result.retry_after) == ({}, 0)


def test_a_limited_result_says_what_it_was_for(site, alice, ann):
    site(rate_limits={"password_change": "100/m/ip,1/h/key"})
    request, other = signed_in_request(alice), signed_in_request(ann)
    assert change.change_password(request, alice, "wrong", NEW, NEW).errors
    assert change.set_password(other, ann, "short", "short").errors
    for result, how in (
        (change.change_password(request, alice, PASSWORD, NEW, NEW), "change"),
        (change.set_password(other, ann, NEW, NEW), "set"),
    ):
        assert (result.done, result.how, result.stale, result.limited) == (False, how, False, True)
        assert result.retry_after > 0 and result.errors == {}


def test_a_set_for_a_user_deleted_meanwhile_is_stale(site, ann):
    request = signed_in_request(ann)
    gone = reloaded(ann)
    ann.delete()
    result = change.set_password(request, gone, NEW, NEW)
    assert result.stale and not result.done and result.how == "set"


def test_a_saved_set_gives_its_attempt_back(site, ann):
    # One attempt an hour: a set that was saved leaves it unspent (a change that
    # follows from this user is not refused by it).
    site(rate_limits={"password_change": "100/m/ip,1/h/key"})
    request = signed_in_request(ann)
    assert change.set_password(request, ann, NEW, NEW).done
    assert change.change_password(request, reloaded(ann), NEW, PASSWORD, PASSWORD).done


@pytest.mark.parametrize("value", [None, 42, ["a", "b"], b"bytes", {"x": 1}])
def test_values_that_are_not_text_are_nothing_typed(site, alice, ann, value):
    result = change.change_password(signed_in_request(alice), alice, value, value, value)
    assert set(result.errors) == {"old_password", "new_password1", "new_password2"}
    assert set(change.set_password(signed_in_request(ann), ann, value, NEW).errors) == {
        "new_password1"
    }


def test_oversized_values_are_refused_before_any_hasher_or_validator(site, alice, monkeypatch):
    big = "x" * (change.MAX_PASSWORD_LENGTH + 1)
    checked = []
    model = get_user_model()
    real = model.check_password
    monkeypatch.setattr(
        model, "check_password", lambda self, raw: checked.append(1) or real(self, raw)
    )
    request = signed_in_request(alice)
    result = change.change_password(request, alice, big, NEW, NEW)
    assert "at most 4096 characters" in result.errors["old_password"][0]
    assert checked == []
    result = change.change_password(request, alice, PASSWORD, big, big)
    assert set(result.errors) == {"new_password1", "new_password2"}
    assert all("at most 4096" in m[0] for m in result.errors.values())
    # Neither was a wrong password: six more wrong ones would be needed to be refused.
    for _ in range(5):
        assert not change.change_password(request, alice, "wrong", NEW, NEW).limited
    exactly = "y" * change.MAX_PASSWORD_LENGTH
    assert change.change_password(request, alice, "wrong", exactly, exactly).limited


def test_the_longest_password_taken_is_taken(site, alice):
    longest = "z" * (change.MAX_PASSWORD_LENGTH - 1) + "!"
    assert change.change_password(signed_in_request(alice), alice, PASSWORD, longest, longest).done
    assert reloaded(alice).check_password(longest)


def test_the_async_twins(site, alice, ann):
    from asgiref.sync import async_to_sync

    alice_request, ann_request = signed_in_request(alice), signed_in_request(ann)
    assert async_to_sync(change.achange_password)(alice_request, alice, PASSWORD, NEW, NEW).done
    assert async_to_sync(change.aset_password)(ann_request, ann, NEW, NEW).done
    assert reloaded(alice).check_password(NEW) and reloaded(ann).check_password(NEW)


def test_help_texts_are_the_validators(site, settings):
    assert len(change.help_texts()) == 4
    assert "Your password can’t be a commonly used password." in change.help_texts()
    settings.AUTH_PASSWORD_VALIDATORS = []
    assert change.help_texts() == []


# -- the page ------------------------------------------------------------------------------


def test_a_visitor_is_sent_to_sign_in(client, site):
    response = client.get(PAGE)
    assert response.status_code == 302
    assert response["Location"] == (
        f"/auth/signin?callbackUrl={quote(PAGE, safe='')}&error=SessionRequired"
    )
    assert client.get(PAGE, headers={"Accept": "application/json"}).status_code == 401
    assert client.post(PAGE, {"op": "set"}).status_code in (302, 403)  # never a change


def test_the_tab_only_where_passwords_are_changed(site, alice):
    browser = Browser().sign_in()
    html = browser.page("/account/")
    assert '<a href="/account/password/">Password</a>' in html
    assert "You have a password on this site." in html
    assert '<a class="webauth-link" href="/account/password/">Change your password</a>' in html
    site(change=False)
    html = browser.page("/account/")
    assert "/account/password/" not in html
    assert browser.get(PAGE).status_code == 404
    assert browser.change().status_code == 404
    site(
        providers=[Email(from_email="x@example.com"), Passkey()],
        experimental={"enable_webauthn": True},
    )
    assert "/account/password/" not in browser.page("/account/sessions/")


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_the_change_form(site, alice, strategy):
    site(strategy)
    response = Browser().sign_in().get(PAGE)
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"
    html = response.content.decode()
    assert "<title>Change your password</title>" in html
    assert '<h1 class="webauth-heading">Change your password</h1>' in html
    assert re.search(r'<a href="/account/password/" aria-current="page">Password</a>', html)
    assert 'name="old_password" type="password" autocomplete="current-password"' in html
    assert 'name="new_password1" type="password" autocomplete="new-password"' in html
    assert 'name="new_password2" type="password" autocomplete="new-password"' in html
    assert '<input type="hidden" name="op" value="change">' in html
    assert 'name="username" value="alice" autocomplete="username" hidden' in html
    assert 'maxlength="4096"' in html
    assert "Your password can’t be entirely numeric." in html  # the validators' rules
    assert 'aria-describedby="webauth-password-rules"' in html
    assert "autofocus" not in html
    assert html.count("csrfmiddlewaretoken") == 1
    assert '<button class="webauth-button" type="submit">Change password</button>' in html


def test_the_set_form(site, ann):
    html = Browser().forced(ann).page()
    assert "<title>Set a password</title>" in html
    assert 'name="old_password"' not in html
    assert '<input type="hidden" name="op" value="set">' in html
    assert "You sign in without a password." in html
    assert "<dd data-username>ann</dd>" in html  # what to sign in with afterwards
    assert '<button class="webauth-button" type="submit">Set password</button>' in html
    overview = Browser().forced(ann).page("/account/")
    assert "You have no password on this site." in overview
    assert '<a class="webauth-link" href="/account/password/">Set a password</a>' in overview


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_a_change_keeps_this_browser_and_signs_the_others_out(site, alice, strategy):
    site(strategy)
    phone = Browser().sign_in()
    laptop = Browser().sign_in()
    TrustedBrowser.objects.create(
        user=alice, token_hash="a" * 64, expires=timezone.now() + timedelta(days=3)
    )
    response = laptop.change()
    assert response.status_code == 302 and response["Location"] == PAGE
    assert response["Cache-Control"] == "private, no-store"
    html = laptop.page()
    assert announced(html) == [("status", CHANGED)]
    assert "<title>Change your password</title>" in html
    assert laptop.signed_in()
    assert not phone.signed_in()
    assert phone.get(PAGE).status_code == 302  # to sign in
    if strategy == "database":
        assert Session.objects.filter(user=alice).count() == 1
    assert not TrustedBrowser.objects.filter(user=alice).exists()
    # The old password no longer signs in; the new one does.
    token = Client().get("/auth/csrf")
    fresh = Client()
    csrf = fresh.get("/auth/csrf").json()["csrfToken"]
    refused = fresh.post(
        "/auth/callback/credentials", {"csrfToken": csrf, "username": "alice", "password": PASSWORD}
    )
    assert "error=CredentialsSignin" in refused["Location"]
    assert token.status_code == 200
    Browser().sign_in(password=NEW)
    [message] = mail.outbox
    assert message.to == ["alice@example.com"]


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_a_set_keeps_this_browser_and_then_the_password_signs_in(site, ann, strategy):
    site(strategy)
    other = Browser().forced(ann)
    here = Browser().forced(ann)
    response = here.set()
    assert response.status_code == 302
    assert announced(here.page()) == [("status", SET)]
    assert "<title>Change your password</title>" in here.page()  # it has one now
    assert here.signed_in() and not other.signed_in()
    Browser().sign_in("ann", NEW)


def test_a_wrong_current_password_is_said_on_the_form(site, alice):
    browser = Browser().sign_in()
    response = browser.change(current="not my password", next="/whoami/")
    assert response.status_code == 400
    assert response["Cache-Control"] == "private, no-store"
    html = response.content.decode()
    assert field_errors(html) == {"webauth-password-current": [WRONG]}
    assert (
        'autocomplete="current-password" maxlength="4096" required autofocus '
        'aria-invalid="true" aria-describedby="webauth-password-current-error"' in html
    )
    assert '<input type="hidden" name="next" value="/whoami/">' in html  # kept for the retry
    assert 'value="not my password"' not in html and NEW not in html  # nothing typed comes back
    assert reloaded(alice).check_password(PASSWORD)
    assert browser.signed_in()


def test_a_validators_refusal_is_said_on_its_field(site, alice):
    response = Browser().sign_in().change(new1="password")
    assert response.status_code == 400
    html = response.content.decode()
    assert field_errors(html) == {"webauth-password-new1": ["This password is too common."]}
    assert (
        'aria-invalid="true" '
        'aria-describedby="webauth-password-new1-error webauth-password-rules"' in html
    )
    mismatch = Browser().sign_in().change(new2="something else entirely")
    assert field_errors(mismatch.content.decode()) == {"webauth-password-new2": [MISMATCH]}


def test_too_many_wrong_passwords_are_refused_on_the_form(site, alice):
    browser = Browser().sign_in()
    for _ in range(5):
        assert browser.change(current="wrong").status_code == 400
    response = browser.change()
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert announced(response.content.decode()) == [("alert", LIMITED)]
    assert reloaded(alice).check_password(PASSWORD)


def test_a_form_for_a_password_that_is_no_longer_there(site, alice, ann):
    # Set in another tab already: this tab's set form is refused, and shows the change form.
    response = Browser().sign_in().set()
    assert response.status_code == 409
    html = response.content.decode()
    assert announced(html) == [("alert", STALE)]
    assert "<title>Change your password</title>" in html
    assert reloaded(alice).check_password(PASSWORD)
    assert Browser().forced(ann).change(current="").status_code == 409


def test_an_unknown_action(site, alice):
    browser = Browser().sign_in()
    response = browser.post(PAGE, {"op": "remove"})
    assert response.status_code == 302
    assert announced(browser.page()) == [("alert", "Unknown action.")]
    assert browser.post(PAGE, {}).status_code == 302


@pytest.mark.parametrize("op", ["change", "set"])
def test_a_stale_session_signs_in_again_first(site, alice, ann, op):
    user = alice if op == "change" else ann
    browser = Browser().sign_in() if op == "change" else Browser().forced(ann)
    make_stale()
    data = {"op": op, "old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW}
    response = browser.post(PAGE, data)
    assert response.status_code == 302
    assert response["Location"] == "/account/reauthenticate/?next=%2Faccount%2Fpassword%2F"
    stored = reloaded(user)
    assert not stored.check_password(NEW)
    # JSON clients are told where to go.
    as_json = browser.post(PAGE, data, headers={"Accept": "application/json"})
    assert as_json.status_code == 401
    assert as_json.json()["error"] == "ReauthenticationRequired"


def test_a_stale_jwt_session_signs_in_again_first(site, alice):
    site("jwt")
    from webauth.sessions import AUTH_TIME_CLAIM

    browser = Browser()
    force_sign_in(
        browser.client, alice, claims={AUTH_TIME_CLAIM: int(timezone.now().timestamp()) - 3600}
    )
    response = browser.change()
    assert response["Location"].startswith("/account/reauthenticate/")
    assert reloaded(alice).check_password(PASSWORD)


def test_without_the_messages_framework_the_page_says_it(site, alice, settings):
    settings.MIDDLEWARE = [
        m
        for m in settings.MIDDLEWARE
        if m != "django.contrib.messages.middleware.MessageMiddleware"
    ]
    browser = Browser().sign_in()
    response = browser.change()
    assert response.status_code == 200
    html = response.content.decode()
    assert announced(html) == [("status", CHANGED)]
    assert "<title>Change your password</title>" in html
    assert browser.signed_in()


def test_without_the_messages_framework_a_set_shows_the_change_form(site, ann, settings):
    settings.MIDDLEWARE = [
        m
        for m in settings.MIDDLEWARE
        if m != "django.contrib.messages.middleware.MessageMiddleware"
    ]
    response = Browser().forced(ann).set()
    assert response.status_code == 200
    html = response.content.decode()
    assert announced(html) == [("status", SET)]
    assert "<title>Change your password</title>" in html  # read from the database


# -- the template tag ----------------------------------------------------------------------


def test_the_tag_posts_to_the_page_and_comes_back(site, alice):
    browser = Browser().sign_in()
    html = browser.page("/settings/")
    assert '<form method="post" action="/account/password/"' in html
    assert '<input type="hidden" name="next" value="/settings/">' in html
    response = browser.change(next="/settings/")
    assert response.status_code == 302 and response["Location"] == "/settings/"
    # A refusal is the account center's page, which comes back here once right.
    refused = browser.change(current="wrong", new1="another new one 9", next="/settings/")
    assert refused.status_code == 400
    assert '<input type="hidden" name="next" value="/settings/">' in refused.content.decode()


def test_the_tag_renders_nothing_where_passwords_are_not_changed(site, alice):
    site(change=False)
    browser = Browser().sign_in()
    assert browser.page("/settings/").strip() == "<main><h1>Settings</h1>\n</main>"
    assert Client().get("/settings/").content.decode() == "<main><h1>Settings</h1></main>"


# -- the last way in -----------------------------------------------------------------------


def test_a_password_set_is_another_way_in(site, ann):
    site(
        providers=[
            DjangoCredentials(),
            GitHub(client_id="gh-id", client_secret="gh-secret"),
        ]
    )
    Account.objects.create(user=ann, type="oauth", provider="github", provider_account_id="a1")
    browser = Browser().forced(ann)
    html = browser.page("/account/connections/")
    assert "disabled" in html
    assert (
        "This connection is your only way to sign in, so it cannot be disconnected. "
        "Set a password first."
    ) in unescape(html)
    assert browser.set().status_code == 302
    html = browser.page("/account/connections/")
    assert "disabled" not in html and "only way to sign in" not in html
    response = browser.post(
        "/account/connections/", {"op": "disconnect", "provider": "github", "account": "a1"}
    )
    assert response.status_code == 302
    assert not Account.objects.filter(user=ann).exists()
    Browser().sign_in("ann", NEW)


def test_the_last_way_in_texts_offer_a_password(site, ann):
    from webauth.account import sections

    site(
        providers=[DjangoCredentials(), Passkey(), GitHub(client_id="a", client_secret="b")],
        experimental={"enable_webauthn": True},
    )
    from webauth.conf import get_config

    config = get_config()
    open_ = [{"available": True, "accounts": []}]
    assert sections.last_connection_text(config, open_, settable=True).endswith(
        "Set a password, create a passkey or connect another account first."
    )
    assert sections.last_connection_text(config, [], settable=True).endswith(
        "Set a password or create a passkey first."
    )
    assert sections.last_connection_text(config, open_).endswith(
        "Create a passkey or connect another account first."
    )
    site(providers=[DjangoCredentials(), GitHub(client_id="a", client_secret="b")])
    config = get_config()
    assert sections.last_connection_text(config, open_, settable=True).endswith(
        "Set a password or connect another account first."
    )


def test_the_only_passkey_offers_a_password(site, ann):
    site(
        providers=[DjangoCredentials(), Passkey(), GitHub(client_id="a", client_secret="b")],
        experimental={"enable_webauthn": True},
    )
    Authenticator.objects.create(
        user=ann,
        credential_id="Y3JlZA",
        provider_account_id="ann",
        credential_public_key="k",
        credential_device_type="multiDevice",
        credential_backed_up=True,
        backup_eligible=True,
    )
    browser = Browser().forced(ann)
    html = unescape(browser.page("/account/passkeys/"))
    assert (
        "This passkey is your only way to sign in, so it cannot be removed. "
        "Set a password, create another passkey or connect an account first."
    ) in html
    site(providers=[DjangoCredentials(), Passkey()], experimental={"enable_webauthn": True})
    html = unescape(browser.page("/account/passkeys/"))
    assert "Set a password or create another passkey first." in html
    site(
        providers=[DjangoCredentials(), Passkey()],
        experimental={"enable_webauthn": True},
        change=False,
    )
    html = unescape(browser.page("/account/passkeys/"))
    assert "Create another passkey first." in html and "Set a password" not in html
    site(providers=[DjangoCredentials(), Passkey()], experimental={"enable_webauthn": True})
    assert browser.set().status_code == 302
    assert "only way to sign in" not in browser.page("/account/passkeys/")


# -- hostile input -------------------------------------------------------------------------


def test_csrf_is_checked_every_way(site, alice):
    browser = Browser().sign_in()
    assert browser.change().status_code == 302  # the real thing works
    alice.set_password(PASSWORD)
    alice.save()
    browser = Browser().sign_in()
    data = {"op": "change", "old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW}
    # No token at all.
    assert browser.post(PAGE, data, csrf=False).status_code == 403
    # A token that is not the cookie's.
    forged = browser.post(PAGE, {**data, "csrfmiddlewaretoken": "x" * 64}, csrf=False)
    assert forged.status_code == 403
    # Another browser's token.
    other = Browser()
    other.client.get("/csrf-cookie/")
    theirs = other.client.cookies["csrftoken"].value
    borrowed = browser.post(PAGE, {**data, "csrfmiddlewaretoken": theirs}, csrf=False)
    assert borrowed.status_code == 403
    # The right token without its cookie.
    mine = browser.client.cookies["csrftoken"].value
    del browser.client.cookies["csrftoken"]
    assert browser.client.post(PAGE, {**data, "csrfmiddlewaretoken": mine}).status_code == 403
    # Auth.js's csrfToken is not Django's.
    authjs = browser.client.get("/auth/csrf").json()["csrfToken"]
    assert browser.client.post(PAGE, {**data, "csrfToken": authjs}).status_code == 403
    # The right token, from another site's page.
    browser.client.get("/csrf-cookie/")
    token = browser.client.cookies["csrftoken"].value
    elsewhere = browser.client.post(
        PAGE, {**data, "csrfmiddlewaretoken": token}, headers={"Origin": "https://evil.example"}
    )
    assert elsewhere.status_code == 403
    assert reloaded(alice).check_password(PASSWORD)


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/",
        "/\\evil.example/",
        "\\\\evil.example",
        "javascript:alert(1)",
        "http://testserver@evil.example/",
        "https:evil.example",
        " //evil.example",
        "/" + "a" * 5000,
    ],
)
def test_next_never_leaves_the_site(site, alice, target):
    browser = Browser().sign_in()
    response = browser.change(next=target)
    assert response.status_code == 302 and response["Location"] == PAGE
    refused = browser.change(current="wrong", next=target)
    assert f'name="next" value="{PAGE}"' in refused.content.decode()
    make_stale()
    stale = browser.change(current=NEW, new1="yet another one 11", next=target)
    assert stale["Location"] == "/account/reauthenticate/?next=%2Faccount%2Fpassword%2F"


def test_next_on_this_site_is_kept(site, alice):
    browser = Browser().sign_in()
    response = browser.change(next="/whoami/?x=1")
    assert response["Location"] == "/whoami/?x=1"


@pytest.mark.parametrize(
    "data",
    [
        {"op": "change"},
        {"op": "set"},
        {"op": ["change", "set"]},
        {"op": "change", "old_password": ["a", PASSWORD], "new_password1": [NEW, "b"]},
        {
            "op": "change",
            "old_password": "\x00" * 10,
            "new_password1": "\x00",
            "new_password2": "\x00",
        },
        {"op": "change", "old_password": "x" * 100_000, "new_password1": "y" * 100_000},
        {"op": "change", "next": "x" * 100_000},
        {"op": "x" * 10_000},
    ],
)
def test_hostile_forms_never_fail(site, alice, data):
    response = Browser().sign_in().post(PAGE, data)
    assert response.status_code in (302, 400, 409), response.status_code
    assert reloaded(alice).check_password(PASSWORD)


@pytest.mark.parametrize(
    "body",
    [
        b"op=change&old_password=%ED%A0%80&new_password1=%FF%FE&new_password2=%FF%FE",
        b"op=change&old_password=%%%&new_password1=&&&=",
        b"op=set&" + b"new_password1=a&" * 2000,
    ],
)
def test_undecodable_bodies_never_fail(site, alice, body):
    browser = Browser().sign_in()
    browser.client.get("/csrf-cookie/")
    token = browser.client.cookies["csrftoken"].value
    response = browser.client.post(
        PAGE,
        body,
        content_type="application/x-www-form-urlencoded",
        headers={"X-CSRFToken": token},
    )
    assert response.status_code in (302, 400, 409), response.status_code
    assert reloaded(alice).check_password(PASSWORD)


def test_a_json_body_is_no_form(site, alice):
    browser = Browser().sign_in()
    browser.client.get("/csrf-cookie/")
    token = browser.client.cookies["csrftoken"].value
    response = browser.client.post(
        PAGE,
        json.dumps(
            {"op": "change", "old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW}
        ),
        content_type="application/json",
        headers={"X-CSRFToken": token},
    )
    assert response.status_code == 302  # no op: "Unknown action."
    assert reloaded(alice).check_password(PASSWORD)


def test_other_methods_are_refused(site, alice):
    browser = Browser().sign_in()
    assert browser.client.put(PAGE).status_code in (403, 405)
    assert browser.client.delete(PAGE).status_code in (403, 405)


def test_nothing_typed_is_logged(site, alice, caplog):
    caplog.set_level("DEBUG")
    browser = Browser().sign_in()
    browser.change(current="my wrong guess 1")
    browser.change()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "my wrong guess 1" not in logged and NEW not in logged and PASSWORD not in logged


# -- races -----------------------------------------------------------------------------------

RACERS = 12


@pytest.mark.django_db(transaction=True)
def test_changes_at_once_from_one_password_save_one(site, alice):
    site(rate_limits={"password_change": "1000/m/ip,1000/5m/key"})
    requests = [signed_in_request(alice) for _ in range(RACERS)]
    news = [f"racer number {n} wins" for n in range(RACERS)]
    results = race(
        [
            (lambda r=r, new=new: change.change_password(r, alice, PASSWORD, new, new))
            for r, new in zip(requests, news, strict=True)
        ]
    )
    done = [n for n, result in enumerate(results) if result.done]
    assert len(done) == 1, results
    for result in results:
        assert result.done or result.stale or result.errors == {"old_password": (WRONG,)}
    assert reloaded(alice).check_password(news[done[0]])


@pytest.mark.django_db(transaction=True)
def test_sets_at_once_save_one(site, ann):
    site(rate_limits={"password_change": "1000/m/ip,1000/5m/key"})
    requests = [signed_in_request(ann) for _ in range(RACERS)]
    news = [f"racer number {n} wins" for n in range(RACERS)]
    results = race(
        [
            (lambda r=r, new=new: change.set_password(r, ann, new, new))
            for r, new in zip(requests, news, strict=True)
        ]
    )
    done = [n for n, result in enumerate(results) if result.done]
    assert len(done) == 1, results
    assert all(result.done or result.stale for result in results)
    assert reloaded(ann).check_password(news[done[0]])


@pytest.mark.django_db(transaction=True)
def test_wrong_passwords_at_once_are_checked_five_times(site, alice):
    requests = [signed_in_request(alice, ip=f"192.0.2.{n}") for n in range(RACERS)]
    results = race(
        [(lambda r=r: change.change_password(r, alice, "guess", NEW, NEW)) for r in requests]
    )
    assert sum(1 for result in results if result.errors) == 5
    assert sum(1 for result in results if result.limited) == RACERS - 5
