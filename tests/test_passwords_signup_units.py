"""Sign-up's parts, one at a time (webauth.passwords.signup).

test_passwords_signup.py drives sign-up through its routes; this module pins
down what the routes cannot show one by one: the documented constants, which
provider and which email rules a sign-up follows, the sealed sign-up a client
holds (its salts, expiry and malformed claims), the link check and the
attempts left.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace

import pytest

from webauth.conf import get_config
from webauth.flows.email import link_fingerprint
from webauth.passwords import signup
from webauth.passwords.signup import Held
from webauth.providers import DjangoCredentials, Email

pytestmark = pytest.mark.django_db

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
TOKEN = "the-link-token-0123456789"
COOKIE = "authjs.signup-pending"


@pytest.fixture
def site(settings):
    def configure(*, providers=None, signup_on=True):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "providers": providers
            if providers is not None
            else [DjangoCredentials(), Email(from_email="Example <no-reply@example.com>")],
            "passwords": {"signup": signup_on},
        }
        return get_config()

    return configure


def held(**fields):
    values = {
        "identifier": "carol@example.com",
        "fields": {"username": "carol", "email": "carol@example.com", "password": "hash"},
        "callback_url": "/after/",
        "binding": "b" * 43,
        "expires": int(time.time()) + 600,
        "link": link_fingerprint(TOKEN),
        **fields,
    }
    return Held(**values)


def test_the_documented_constants():
    assert signup.GRANT_PREFIX == "signup:"
    assert signup.MAX_AGE == 3600
    assert signup.APP_SALT == "webauth.signup-token"
    assert signup.grant_identifier("carol@example.com") == "signup:carol@example.com"


def test_sign_up_needs_the_switch_and_a_password_provider(site):
    assert signup.enabled(site())
    assert not signup.enabled(site(signup_on=False))
    assert not signup.enabled(site(providers=[Email(from_email="x@example.com")]))

    class ProjectCredentials(DjangoCredentials):
        pass

    config = site(providers=[Email(from_email="x@example.com"), ProjectCredentials()])
    assert isinstance(signup.credentials_provider(config), ProjectCredentials)
    assert signup.credentials_provider(site(providers=[Email()])) is None


def test_the_email_rules_are_the_first_code_sender_or_webauths_own(site):
    own = signup.grant_email(site(providers=[DjangoCredentials()]))
    assert (own.id, own.max_age) == ("signup", 3600) and own.code is not None
    links_only = Email(id="links", from_email="x@example.com", code=None)
    codes = Email(id="codes", from_email="y@example.com", max_age=900)
    config = site(providers=[DjangoCredentials(), links_only, codes])
    assert signup.grant_email(config).id == "codes"
    assert signup.grant_email(site(providers=[DjangoCredentials(), links_only])) is own


# -- the sealed sign-up ---------------------------------------------------------------------


def test_a_sealed_sign_up_opens_with_its_salt_only(site):
    config = site()
    kept = held(attempts=2)
    token = signup.app_token(config, kept)
    assert signup.from_app_token(config, token) == kept
    assert signup.unseal(config, token, "authjs.signup-pending") is None
    assert signup.from_app_token(config, signup.seal(config, kept, "authjs.signup-pending")) is None


def test_a_sealed_sign_up_lives_as_long_as_its_grant(site, monkeypatch):
    config = site()
    captured = {}
    real = signup.jose.encode
    monkeypatch.setattr(signup.jose, "encode", lambda **kw: captured.update(kw) or real(**kw))
    now = int(time.time())
    signup.seal(config, held(expires=now + 300), signup.APP_SALT)
    assert 298 <= captured["max_age"] <= 300
    signup.seal(config, held(expires=now - 9), signup.APP_SALT)
    assert captured["max_age"] == 1


def test_what_is_no_sealed_sign_up(site):
    config = site()
    for value in (None, 5, "", b"x", "x" * 16_001, "not a token"):
        assert signup.unseal(config, value, signup.APP_SALT) is None


@pytest.mark.parametrize(
    "claims",
    [
        {"expires": int(time.time()) - 1},
        {"expires": "9999999999"},
        {"identifier": 5},
        {"binding": None},
        {"link": ["x"]},
        {"fields": 5},
    ],
)
def test_a_sign_up_that_is_expired_or_malformed_is_none(site, claims):
    config = site()
    # Sealed as it is, whatever its claims (the client cannot forge one: this is the
    # site's own code gone wrong, or an old format).
    token = signup.jose.encode(
        token={**asdict(held()), **claims}, secret=list(config.secret), salt="s", max_age=600
    )
    assert signup.unseal(config, token, "s") is None


def test_a_sign_up_without_a_claim_is_none(site):
    config = site()
    for missing in ("identifier", "fields", "callback_url", "binding", "expires", "link"):
        claims = asdict(held())
        del claims[missing]
        token = signup.jose.encode(token=claims, secret=list(config.secret), salt="s", max_age=600)
        assert signup.unseal(config, token, "s") is None, missing
    claims = asdict(held())
    del claims["attempts"]
    token = signup.jose.encode(token=claims, secret=list(config.secret), salt="s", max_age=600)
    assert signup.unseal(config, token, "s").attempts == 0


def test_a_sign_up_expires_at_its_second(site, monkeypatch):
    config = site()
    now = int(time.time())
    token = signup.seal(config, held(expires=now + 100), "s")
    monkeypatch.setattr(signup.time, "time", lambda: now + 100)
    assert signup.unseal(config, token, "s") is None
    monkeypatch.setattr(signup.time, "time", lambda: now + 99)
    assert signup.unseal(config, token, "s") is not None


# -- the link and the attempts ---------------------------------------------------------------


def test_the_link_is_the_one_mailed_to_the_address_held():
    kept = held()
    assert signup.open_link(kept, {"token": TOKEN, "email": "carol@example.com"}) is True
    assert signup.open_link(kept, {"token": TOKEN + "x", "email": "carol@example.com"}) is False
    assert signup.open_link(kept, {"token": TOKEN, "email": "dave@example.com"}) is False
    assert signup.open_link(kept, {"token": "", "email": "carol@example.com"}) is False
    assert signup.open_link(None, {"token": TOKEN, "email": "carol@example.com"}) is False
    assert signup.open_link(kept, {"token": [TOKEN], "email": "carol@example.com"}) is False
    assert signup.open_link(kept, {"token": TOKEN, "email": None}) is False
    assert signup.open_link(kept, {}) is False
    # An empty token and one over 256 characters are refused before any
    # fingerprint is compared, even when the sign-up held theirs.
    for token in ("", "t" * 257):
        own = held(link=link_fingerprint(token))
        assert signup.open_link(own, {"token": token, "email": "carol@example.com"}) is False
    longest = held(link=link_fingerprint("t" * 256))
    assert signup.open_link(longest, {"token": "t" * 256, "email": "carol@example.com"}) is True


def test_the_attempts_left_count_down_to_none(site):
    config = site()
    assert signup.code_attempts_left(config, held()) == 5
    assert signup.code_attempts_left(config, held(attempts=4)) == 1
    assert signup.code_attempts_left(config, held(attempts=5)) == 0
    assert signup.code_attempts_left(config, held(attempts=9)) == 0
    fewer = site(
        providers=[DjangoCredentials(), Email(from_email="x@example.com", code_max_attempts=3)]
    )
    assert signup.code_attempts_left(fewer, replace(held(), attempts=1)) == 2


def test_only_an_email_providers_rules_are_taken():
    from types import SimpleNamespace

    # Something else of the email kind with a code of its own is passed over.
    stranger = SimpleNamespace(type="email", id="stranger", code="digits")
    codes = Email(id="codes", from_email="y@example.com")
    assert signup.grant_email(SimpleNamespace(providers=[stranger, codes])) is codes


def test_only_text_of_a_bounded_size_is_decrypted(site, monkeypatch):
    config = site()
    tried = []
    monkeypatch.setattr(signup.jose, "decode", lambda **kw: tried.append(kw["token"]))
    for value in (None, 5, "", "x" * 16_001):
        assert signup.unseal(config, value, signup.APP_SALT) is None
    assert tried == []
    assert signup.unseal(config, "x" * 16_000, signup.APP_SALT) is None
    assert signup.unseal(config, "y", signup.APP_SALT) is None
    assert tried == ["x" * 16_000, "y"]


def _state(config, max_age=None):
    from types import SimpleNamespace

    from webauth.cookies import cookie_specs

    specs = cookie_specs(config, False)
    if max_age is not None:
        specs[signup.PENDING] = replace(specs[signup.PENDING], max_age=max_age)
    return SimpleNamespace(cookies=specs, config=config, request_cookies={})


def test_the_pending_cookie_lasts_as_long_as_its_grant(site, monkeypatch):
    from django.http import HttpResponse

    config = site()
    now = 1_800_000_000
    monkeypatch.setattr(signup.time, "time", lambda: now)
    for expires, lifetime in ((now + 600, 600), (now + 1, 1), (now - 30, 1)):
        response = HttpResponse()
        signup.write_pending(_state(config), response, held(expires=expires))
        assert int(response.cookies[COOKIE]["max-age"]) == lifetime, expires
    # A project's own Max-Age for the cookie (WEBAUTH["cookies"]) stands.
    response = HttpResponse()
    signup.write_pending(_state(config, max_age=120), response, held(expires=now + 600))
    assert int(response.cookies[COOKIE]["max-age"]) == 120


def test_only_the_forms_own_fields_as_text_are_read():
    from webauth.passwords.forms import signup_form_class

    form_class = signup_form_class(None)
    params = {
        "username": "carol",
        "email": ["carol@example.com"],  # a JSON list is no answer
        "password1": 5,
        "is_superuser": "on",  # not the form's
        "csrfToken": "t",
    }
    assert signup._form_data(params, form_class) == {"username": "carol"}


def test_a_username_field_that_is_the_address_is_no_username():
    class ByAddress:
        USERNAME_FIELD = "email"

        @staticmethod
        def get_email_field_name():
            return "email"

    class ByName(ByAddress):
        USERNAME_FIELD = "handle"

    assert signup._username_field(ByAddress) is None
    assert signup._username_field(ByName) == "handle"
    # No username to take under an address-named model, and nothing looked up:
    # the class has no manager to ask.
    assert signup._username_taken(ByAddress, "bob") is False


def test_only_a_username_of_text_can_be_taken(django_user_model):
    django_user_model.objects.create(username="")  # not that Django's forms allow one
    django_user_model.objects.create(username="5")
    django_user_model.objects.create(username="Carol")
    assert signup._username_taken(django_user_model, "carol") is True  # any case
    assert signup._username_taken(django_user_model, "dave") is False
    for username in ("", 5, None, ["5"]):
        assert signup._username_taken(django_user_model, username) is False, username


# -- what the sign-up keeps of the form --------------------------------------------------------


def _bound(form_class, **data):
    form = form_class(
        data={
            "username": "carol",
            "email": "carol@example.com",
            "password1": "a long new passphrase 81",
            "password2": "a long new passphrase 81",
            **data,
        }
    )
    assert form.is_valid(), form.errors
    return form, form.save(commit=False)


def _forms():
    from django import forms
    from django.contrib.auth import get_user_model

    from webauth.passwords.forms import SignupForm

    class Listed(SignupForm):
        # Declared first, not the model's: skipped, never a reason to stop.
        terms = forms.BooleanField(required=False)
        # A reverse relation of the user model by name: no column of the user's.
        webauth_accounts = forms.CharField(required=False)

        class Meta(SignupForm.Meta):
            model = get_user_model()
            fields = ("terms", "webauth_accounts", "username", "email", "groups", "last_login")

    class Unlisted(SignupForm):
        # A model field the form declares without listing it in Meta.fields.
        first_name = forms.CharField(required=False)

        class Meta(SignupForm.Meta):
            model = get_user_model()
            fields = ("username", "email")

    class Everything(SignupForm):
        class Meta(SignupForm.Meta):
            model = get_user_model()
            fields = None
            exclude = ("password",)  # Django keeps no list of fields: the form's own are read

    return Listed, Unlisted, Everything


def test_the_fields_kept_are_the_forms_listed_columns_and_the_password(db):
    listed, unlisted, everything = _forms()
    form, instance = _bound(listed)
    kept = signup._fields_of(form, instance)
    # No terms, no reverse relation, no many-to-many (groups); a None stays None.
    assert set(kept) == {"username", "email", "last_login", "password"}
    assert kept["username"] == "carol" and kept["last_login"] is None
    assert kept["password"].startswith(("pbkdf2_", "argon2", "bcrypt", "md5$"))
    form, instance = _bound(unlisted, first_name="Carol")
    assert set(signup._fields_of(form, instance)) == {"username", "email", "password"}
    form, instance = _bound(everything, date_joined="2030-01-01 00:00")
    assert {"username", "email", "password", "is_staff", "date_joined"} <= set(
        signup._fields_of(form, instance)
    )
    assert "groups" not in signup._fields_of(form, instance)


def test_the_user_made_of_the_fields_kept_has_no_id_of_theirs(db):
    instance = signup._instance_of(
        {
            "id": "99",
            "nope": "x",
            "username": "carol",
            "last_login": None,
            "is_staff": None,  # a None is kept as None, not given to the field to parse
            "date_joined": "2030-01-01T00:00:00+00:00",
        }
    )
    assert instance.pk is None and not hasattr(instance, "nope")
    assert instance.username == "carol" and instance.last_login is None
    assert instance.is_staff is None
    assert instance.date_joined.year == 2030


# -- the message's thread ----------------------------------------------------------------------


def test_the_message_is_sent_from_a_daemon_thread_of_its_own(site, monkeypatch):
    import threading

    config = site()
    release = threading.Event()
    ran = []

    def send(*args):
        ran.append(args)
        release.wait(5)
        with signup._mailers_lock:
            signup._mailers.discard(threading.current_thread())

    monkeypatch.setattr(signup, "_send", send)
    signup._mail_later(config, "signup", {}, "", "carol@example.com")
    (thread,) = list(signup._mailers)
    assert thread.name == "webauth-signup-mail" and thread.daemon
    release.set()
    thread.join(5)
    ((_config, template, _context, sender, address, _language),) = ran
    assert (template, address) == ("signup", "carol@example.com")
    assert sender == "webmaster@localhost"  # no sender of its own: DEFAULT_FROM_EMAIL


def test_waiting_for_the_messages_takes_ten_seconds_at_most_by_default(monkeypatch):
    joins = []

    class Stuck:
        def join(self, timeout):
            joins.append(timeout)

    from types import SimpleNamespace

    def clock(*readings):  # the deadline, the join, the check
        return SimpleNamespace(monotonic=iter(readings).__next__)

    monkeypatch.setattr(signup, "_mailers", {Stuck()})
    monkeypatch.setattr(signup, "time", clock(100.0, 100.0, 110.0))
    signup.wait_for_mail()  # over at the deadline itself
    assert joins == [10.0]
    joins.clear()
    monkeypatch.setattr(signup, "time", clock(100.0, 200.0, 300.0))
    signup.wait_for_mail()  # a deadline passed is no time to wait
    assert joins == [0.0]


class _Refusing:
    """A mail backend that fails as Django's SMTP backend does: unless told to be silent."""

    def __init__(self, fail_silently=False, **kwargs):
        self.fail_silently = fail_silently

    def send_messages(self, messages):
        if not self.fail_silently:
            raise OSError("no mail server")
        return 0


def test_a_message_that_cannot_be_sent_is_logged(site, settings, caplog):
    settings.EMAIL_BACKEND = f"{__name__}._Refusing"
    config = site()
    context = {"url": "u", "code": "C", "minutes": 1, "host": "h", "theme": {}}
    signup._send(config, "signup", context, "x@example.com", "carol@example.com", None)
    assert any("sign-up email could not be sent" in r.getMessage() for r in caplog.records)


# -- redeeming the link ------------------------------------------------------------------------


@pytest.fixture
def redeeming(site, rf, monkeypatch):
    """``redeem_link`` on a request of its own; what the adapter was asked."""
    from webauth.state import AuthState

    config = site()
    asked = []
    answer = []
    monkeypatch.setattr(
        config.storage.adapter,
        "use_verification_token",
        lambda identifier, token: asked.append(identifier) or (answer[0] if answer else None),
    )
    request = rf.post("/auth/signup")

    def redeem(kept, token):
        return signup.redeem_link(AuthState(request, config), kept, token)

    redeem.asked, redeem.answer = asked, answer
    return redeem


def test_a_link_token_is_text_of_a_bounded_size_that_the_sign_up_holds(redeeming):
    for token in (None, 5, ["t"], "", "t" * 257):
        own = held(link=link_fingerprint(token if isinstance(token, str) else "t"))
        assert redeeming(own, token) is None
    assert redeeming(held(), "another token") is None
    assert redeeming.asked == []  # nothing was looked up for any of them
    assert redeeming(held(link=link_fingerprint("t" * 256)), "t" * 256) is None
    assert redeeming.asked == ["signup:carol@example.com"]


@pytest.mark.parametrize("late", [0, 60])
def test_an_expired_grant_an_adapter_gives_back_makes_no_user(redeeming, late, django_user_model):
    from datetime import UTC, datetime, timedelta

    from freezegun import freeze_time

    from webauth.types import VerificationToken

    now = datetime(2030, 1, 1, tzinfo=UTC)
    redeeming.answer.append(
        VerificationToken(identifier="x", token="t", expires=now - timedelta(seconds=late))
    )
    with freeze_time(now):
        assert redeeming(held(expires=int(now.timestamp()) + 600), TOKEN) is None
    assert not django_user_model.objects.filter(username="carol").exists()
