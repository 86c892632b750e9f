"""The password reset's parts, one at a time (webauth.passwords.reset).

test_passwords_reset.py drives the reset through its routes; this module
pins down what the routes cannot show one by one: the documented constants,
the errors, what an identifier may be, what a ticket keeps and refuses, the
sealed tokens' separation, the fingerprints and decoys, who may reset, and
the system checks.
"""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import get_user_model

from webauth.conf import get_config
from webauth.errors import AuthError, Verification
from webauth.passwords import reset
from webauth.passwords.reset import InvalidIdentifier, PasswordRefused, Ticket, WrongCode
from webauth.providers import DjangoCredentials, Email

pytestmark = pytest.mark.django_db

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
OLD = "old password 1"


@pytest.fixture
def site(settings):
    def configure(*, providers=None, **options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "providers": providers
            if providers is not None
            else [DjangoCredentials(), Email(from_email="Example <no-reply@example.com>")],
            "passwords": {"reset": True},
            **options,
        }
        return get_config()

    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", email="alice@example.com", password=OLD)


def ticket(**fields):
    values = {
        "identifier": "alice@example.com",
        "binding": "b" * 43,
        "expires": int(time.time()) + 600,
        **fields,
    }
    return Ticket(**values)


# -- what is documented ---------------------------------------------------------------------


def test_the_documented_constants():
    # docs/passwords.md states each of these.
    assert reset.GRANT_PREFIX == "password-reset:"
    assert reset.DEFAULT_MAX_AGE == 3600
    assert reset.MAX_IDENTIFIER_LENGTH == 254
    assert reset.MAX_PASSWORD_LENGTH == 4096
    assert reset.OUTBOX_LIMIT == 1000
    assert reset.EXIT_WAIT == 5.0
    assert reset.APP_SALT == "webauth.password-reset.app"


# -- the errors -----------------------------------------------------------------------------


def test_the_errors_say_what_happened_and_who_caused_it():
    invalid = InvalidIdentifier("Enter it again.")
    assert str(invalid).startswith("The identifier of a password reset is not valid.")
    assert invalid.field_message == "Enter it again." and invalid.user_caused is True
    assert isinstance(invalid, AuthError)

    wrong = WrongCode(ticket(), left=3)
    assert str(wrong).startswith("A wrong or expired password reset code was entered.")
    assert wrong.left == 3 and wrong.ticket == ticket(expires=wrong.ticket.expires)
    assert isinstance(wrong, Verification) and isinstance(reset.ResetExpired(), Verification)

    refused = PasswordRefused({"new_password1": ("Too short.", "Too common."), "x": ["No."]})
    assert str(refused).startswith("The new password was refused.")
    assert refused.user_caused is True and (refused.ticket, refused.token) == (None, None)
    assert refused.errors == {"new_password1": ["Too short.", "Too common."], "x": ["No."]}
    assert refused.messages == ["Too short.", "Too common.", "No."]


# -- what may be typed ----------------------------------------------------------------------


def test_an_identifier_is_trimmed_and_bounded():
    assert reset.clean_identifier("  alice@example.com \n") == "alice@example.com"
    longest = "a" * 242 + "@example.com"
    assert len(longest) == reset.MAX_IDENTIFIER_LENGTH
    assert reset.clean_identifier(longest) == longest
    assert reset.clean_identifier(f"  {longest}  ") == longest  # the spaces do not count
    with pytest.raises(InvalidIdentifier) as too_long:
        reset.clean_identifier("a" + longest)
    assert too_long.value.field_message == "That is too long for an email address or a username."


@pytest.mark.parametrize("typed", [None, 5, ["alice"], b"alice", "", "   "])
def test_nothing_typed_is_asked_for(typed):
    with pytest.raises(InvalidIdentifier) as refused:
        reset.clean_identifier(typed)
    assert refused.value.field_message == "Enter your email address or username."


@pytest.mark.parametrize("typed", ["ali\x00ce", "alice\x07", "al\ud800ice", "a\x1bb"])
def test_control_characters_and_surrogates_are_no_identifier(typed):
    with pytest.raises(InvalidIdentifier) as refused:
        reset.clean_identifier(typed)
    assert refused.value.field_message == "Enter a valid email address or username."


def test_other_characters_are_kept():
    # Letters of any script, marks and format characters are the lookup's to judge.
    assert reset.clean_identifier("álîçe\u200d") == "álîçe\u200d"


# -- the ticket -----------------------------------------------------------------------------


def test_a_ticket_survives_its_claims():
    kept = ticket(callback_url="/after/", attempts=2, links=("l" * 22, "m" * 22))
    assert reset._ticket_of(reset._claims(kept)) == kept


@pytest.mark.parametrize(
    "change",
    [
        {"used": True},
        {"used": False},  # any "used" at all: a spent ticket
        {"identifier": ""},
        {"identifier": 5},
        {"binding": ""},
        {"binding": None},
        {"expires": None},
        {"expires": "9999999999"},
        {"expires": True},
        {"expires": 1},
    ],
)
def test_a_ticket_that_is_spent_expired_or_malformed_is_none(change):
    claims = {**reset._claims(ticket()), **change}
    assert reset._ticket_of(claims) is None


def test_a_ticket_expires_at_its_second(monkeypatch):
    now = 1_800_000_000
    monkeypatch.setattr(reset.time, "time", lambda: now)
    assert reset._ticket_of(reset._claims(ticket(expires=now))) is None
    assert reset._ticket_of(reset._claims(ticket(expires=now + 1))) is not None


def test_a_tickets_loose_fields_are_read_safely():
    claims = reset._claims(ticket())
    loose = reset._ticket_of({**claims, "callbackUrl": 5, "attempts": "3"})
    assert (loose.callback_url, loose.attempts) == ("", 0)
    assert reset._ticket_of({**claims, "attempts": -4}).attempts == 0
    assert reset._ticket_of({**claims, "attempts": 10**6}).attempts == 1000
    assert reset._ticket_of({**claims, "attempts": 1000}).attempts == 1000
    assert reset._ticket_of({**claims, "attempts": True}).attempts == 0
    assert reset._ticket_of(None) is None


def test_only_well_formed_links_are_kept_and_only_the_first_few():
    good = [chr(ord("a") + n) * 22 for n in range(8)]
    assert reset._links_of({"links": good}) == tuple(good[:5])
    assert reset._links_of({"links": ["short", 5, "x" * 23, good[0]]}) == (good[0],)
    assert reset._links_of({"links": "a" * 22}) == ()
    assert reset._links_of({}) == ()


# -- sealed tokens ------------------------------------------------------------------------


def test_an_apps_token_opens_with_its_own_salt_only(site):
    config = site()
    sealed = reset.seal(config, ticket())
    assert reset.unseal(config, sealed) == ticket(expires=reset.unseal(config, sealed).expires)
    # The browser's cookie is sealed for its name: neither opens as the other.
    cookie_salt = "authjs.reset-pending"
    assert reset.unseal(config, sealed, cookie_salt) is None
    assert reset.unseal(config, reset.seal(config, ticket(), cookie_salt)) is None


def test_a_token_is_text_of_a_bounded_size(site):
    config = site()
    for value in (None, 5, "", b"token", "x" * 8193):
        assert reset.unseal(config, value) is None
    # One at the bound is read (and fails only for being no token).
    assert reset._decode(config, "x" * 8192, reset.APP_SALT) is None


def test_a_token_lives_as_long_as_its_ticket(site, monkeypatch):
    config = site()
    captured = {}
    real = reset.jose.encode

    def encode(**kwargs):
        captured.update(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(reset.jose, "encode", encode)
    now = int(time.time())
    reset.seal(config, ticket(expires=now + 300))
    assert 298 <= captured["max_age"] <= 300
    reset.seal(config, ticket(expires=now - 50))
    assert captured["max_age"] == 1


# -- fingerprints, decoys, who may reset ----------------------------------------------------


def test_the_stamp_is_a_fingerprint_of_the_hash(alice):
    import hashlib

    stamp = reset._stamp(alice)
    expected = hashlib.sha256(b"webauth password reset\0" + alice.password.encode()).hexdigest()
    assert stamp == expected
    assert len(reset._DECOY_STAMP) == len(stamp) == 64  # a decoy's grant looks like a real one
    assert set(reset._DECOY_STAMP) == {"0"}
    alice.set_password("another one 3")
    assert reset._stamp(alice) != stamp


def test_a_decoy_is_the_same_for_each_spelling_and_nobodys(site):
    config = site()
    decoy = reset._decoy(config, "Nobody@Example.com")
    assert decoy == reset._decoy(config, "nobody@example.com")
    assert decoy != reset._decoy(config, "somebody@example.com")
    assert decoy.startswith("~") and len(decoy) == 23 and "=" not in decoy
    other = site(secret="another-secret-0123456789abcdef0123456789")
    assert reset._decoy(other, "nobody@example.com") != decoy


def test_a_grant_names_the_user_or_a_decoy(site, alice):
    config = site()
    grant = reset._grant_for(config, "alice@example.com")
    assert (grant.user, grant.identifier) == (alice, f"password-reset:{alice.pk}")
    assert grant.stamp == reset._stamp(alice)
    decoy = reset._grant_for(config, "nobody@example.com")
    assert decoy.user is None and decoy.stamp == reset._DECOY_STAMP
    assert decoy.identifier == "password-reset:" + reset._decoy(config, "nobody@example.com")


def test_who_may_reset(alice):
    model = get_user_model()
    assert reset.can_reset(alice) is True
    assert reset.can_reset(None) is False
    alice.is_active = False
    assert reset.can_reset(alice) is False
    nopass = model.objects.create_user("nopass", email="nopass@example.com")
    assert reset.can_reset(nopass) is False
    noaddr = model.objects.create_user("noaddr", password=OLD)
    assert reset.can_reset(noaddr) is False

    class Minimal:  # no is_active: active, as Django's AbstractBaseUser is
        email = "min@example.com"

        def has_usable_password(self):
            return True

    assert reset.can_reset(Minimal()) is True
    no_method = Minimal()
    no_method.has_usable_password = True  # not callable
    assert reset.can_reset(no_method) is False


def test_a_user_is_found_by_address_first_then_by_username(site, alice):
    config = site()
    model = get_user_model()
    # Bob's username is alice's address: the address's owner comes first.
    model.objects.create_user("alice@example.com", email="bob@example.com", password=OLD)
    assert reset.find_user(config, "alice@example.com") == alice
    assert reset.find_user(config, "alice") == alice
    assert reset.find_user(config, "nobody@example.com") is None
    assert reset.find_user(config, "nobody") is None


# -- system checks --------------------------------------------------------------------------


def test_the_checks_need_the_reset_on(site, settings):
    config = site(providers=[Email()])
    settings.DEFAULT_FROM_EMAIL = "webmaster@localhost"
    settings.DEBUG = False
    assert {m.id for m in reset.system_checks(config)} == {"webauth.W016", "webauth.W017"}
    settings.WEBAUTH = {**settings.WEBAUTH, "passwords": {"reset": False}}
    assert reset.system_checks(get_config()) == []


def test_w016_only_for_djangos_default_sender_outside_debug(site, settings):
    settings.DEFAULT_FROM_EMAIL = "webmaster@localhost"
    settings.DEBUG = False
    [message] = reset.system_checks(site(providers=[DjangoCredentials()]))
    assert message.id == "webauth.W016"
    assert message.msg.startswith("The password reset emails are sent from Django's default")
    assert message.hint.startswith("Set DEFAULT_FROM_EMAIL, or give an Email provider")
    settings.DEBUG = True
    assert reset.system_checks(site(providers=[DjangoCredentials()])) == []
    settings.DEBUG = False
    settings.DEFAULT_FROM_EMAIL = "site@example.com"
    assert reset.system_checks(site(providers=[DjangoCredentials()])) == []
    settings.DEFAULT_FROM_EMAIL = "webmaster@localhost"
    sender = Email(from_email="site@example.com")
    assert reset.system_checks(site(providers=[DjangoCredentials(), sender])) == []


def test_w017_without_a_password_provider(site, settings):
    settings.DEFAULT_FROM_EMAIL = "site@example.com"
    [message] = reset.system_checks(site(providers=[Email()]))
    assert message.id == "webauth.W017"
    assert message.msg.startswith("WEBAUTH['passwords']['reset'] is on, but no DjangoCredentials")
    assert message.hint.startswith("Add webauth.providers.DjangoCredentials()")


def test_e016_an_adapter_without_the_methods(site, settings):
    settings.DEFAULT_FROM_EMAIL = "site@example.com"
    [message] = reset.system_checks(site(adapter="tests.test_passwords_reset.NoGrants"))
    assert message.id == "webauth.E016"
    assert message.msg.startswith("The webauth adapter NoGrants lacks ")
    assert "use_verification_code" in message.msg
    assert message.hint.startswith("Implement the methods")


def test_without_an_email_provider_the_reset_follows_its_own_rules(site):
    own = reset.grant_email(site(providers=[DjangoCredentials()]))
    assert (own.id, own.name, own.max_age) == ("password-reset", "Password reset", 3600)
    assert own.code is not None and own.code_max_attempts == 5
    assert reset.grant_email(site(providers=[DjangoCredentials()])) is own  # made once
    configured = Email(from_email="site@example.com", max_age=900)
    assert reset.grant_email(site(providers=[DjangoCredentials(), configured])) is configured


# -- finding the user, with an adapter of the test's own -------------------------------------


class Recorder:
    """A logger that keeps what it is given."""

    def __init__(self):
        self.errors = []

    def error(self, exc):
        self.errors.append(exc)


def fake_config(get_user_by_email):
    from types import SimpleNamespace

    return SimpleNamespace(
        storage=SimpleNamespace(get_user_by_email=get_user_by_email), logger=Recorder()
    )


def test_an_address_two_users_hold_is_nobodys_and_logged():
    from webauth.errors import AmbiguousEmail

    ambiguous = AmbiguousEmail("two users")

    def lookup(address):
        raise ambiguous

    config = fake_config(lookup)
    assert reset._by_address(config, "alice@example.com") is None
    assert config.logger.errors == [ambiguous]


def test_the_adapters_record_gives_its_user(alice):
    from types import SimpleNamespace

    with_instance = fake_config(lambda address: SimpleNamespace(instance=alice, id=str(alice.pk)))
    assert reset._by_address(with_instance, "alice@example.com") is alice
    # A record without the instance: the model's user of that id.
    bare = fake_config(lambda address: SimpleNamespace(instance=None, id=str(alice.pk)))
    found = reset._by_address(bare, "alice@example.com")
    assert found == alice and found is not alice
    assert reset._by_address(fake_config(lambda address: None), "alice@example.com") is None


def test_only_an_address_is_asked_of_the_adapter(alice):
    asked = []
    config = fake_config(lambda address: asked.append(address))
    assert reset.find_user(config, "alice") == alice
    assert asked == []
    reset.find_user(config, "Alice@Example.com")
    assert asked == ["alice@example.com"]  # webauth's canonical form


def test_the_address_is_read_from_the_models_email_field():
    class Contact:
        contact = "Carol@Example.com"
        email = "not this one"

        def get_email_field_name(self):
            return "contact"

    assert reset._address_of(Contact()) == "carol@example.com"
    from types import SimpleNamespace

    assert reset._address_of(SimpleNamespace(email="dave@example.com")) == "dave@example.com"
    assert reset._address_of(SimpleNamespace()) is None


def test_the_stamp_of_no_password_is_the_stamp_of_an_empty_one():
    from types import SimpleNamespace

    empty = reset._stamp(SimpleNamespace(password=""))
    assert reset._stamp(SimpleNamespace(password=None)) == empty
    assert reset._stamp(SimpleNamespace()) == empty
    import hashlib

    assert empty == hashlib.sha256(b"webauth password reset\0").hexdigest()


def test_a_ticket_starts_with_no_callback_no_attempts_and_no_links():
    fresh = Ticket(identifier="alice", binding="b", expires=1)
    assert (fresh.callback_url, fresh.attempts, fresh.links) == ("", 0, ())


def test_the_decoy_is_a_keyed_hash_of_its_own_kind(site):
    import base64
    import hashlib
    import hmac

    from webauth.identity import identifier_key

    config = site()
    # Keyed with the site's first secret and labelled, so that no other keyed hash
    # webauth makes of an identifier can stand for a decoy.
    digest = hmac.new(
        SECRET.encode(),
        b"webauth password reset decoy\0" + identifier_key("Nobody@Example.com").encode(),
        hashlib.sha256,
    ).digest()[:16]
    expected = "~" + base64.urlsafe_b64encode(digest).decode().rstrip("=")
    assert reset._decoy(config, "Nobody@Example.com") == expected


def test_only_text_of_a_bounded_size_is_decrypted(site, monkeypatch):
    config = site()
    tried = []
    monkeypatch.setattr(reset.jose, "decode", lambda **kw: tried.append(kw["token"]))
    for value in (None, 5, "", "x" * 8193):
        assert reset._decode(config, value, reset.APP_SALT) is None
    assert tried == []
    reset._decode(config, "x" * 8192, reset.APP_SALT)
    reset._decode(config, "y", reset.APP_SALT)
    assert tried == ["x" * 8192, "y"]


def test_a_ticket_whose_binding_is_no_text_is_none():
    claims = reset._claims(ticket())
    assert reset._ticket_of({**claims, "binding": 5}) is None
    assert reset._ticket_of({**claims, "identifier": ["alice"]}) is None


def _with_payload(monkeypatch, payload):
    monkeypatch.setattr(reset, "_payload", lambda state: payload)


@pytest.mark.parametrize(
    ("payload", "answer"),
    [
        (None, None),
        ({"used": True, "done": True, "callbackUrl": "/after/"}, "/after/"),
        ({"used": True, "done": True, "callbackUrl": 5}, ""),
        ({"used": True, "done": True}, ""),
        ({"used": True, "callbackUrl": "/after/"}, None),  # found void, not finished
        ({"done": True, "callbackUrl": "/after/"}, None),
        ({"used": 1, "done": True, "callbackUrl": "/after/"}, None),
        ({"used": True, "done": "yes", "callbackUrl": "/after/"}, None),
    ],
)
def test_a_finished_reset_is_told_by_its_cookie(monkeypatch, payload, answer):
    _with_payload(monkeypatch, payload)
    assert reset.read_used(object()) == answer


def test_a_reset_is_over_once_its_cookie_holds_no_live_ticket(monkeypatch):
    _with_payload(monkeypatch, None)
    assert reset.is_over(object()) is False  # never asked here
    _with_payload(monkeypatch, reset._claims(ticket()))
    assert reset.is_over(object()) is False
    _with_payload(monkeypatch, {"used": True, "links": ["l" * 22]})
    assert reset.is_over(object()) is True
    assert reset.earlier_links(object()) == ("l" * 22,)
    _with_payload(monkeypatch, None)
    assert reset.earlier_links(object()) == ()


# -- the pending cookie and the links ---------------------------------------------------------


def _state(config, max_age=None):
    from dataclasses import replace as with_changes
    from types import SimpleNamespace

    from webauth.cookies import cookie_specs

    specs = cookie_specs(config, False)
    if max_age is not None:
        specs[reset.PENDING] = with_changes(specs[reset.PENDING], max_age=max_age)
    return SimpleNamespace(cookies=specs, config=config)


def _max_age(response):
    return int(response.cookies["authjs.reset-pending"]["max-age"])


def test_the_pending_cookie_outlives_its_grant_by_the_links_memory(site, monkeypatch):
    from django.http import HttpResponse

    from webauth.flows.email import REMEMBER_LINKS

    config = site()
    now = 1_800_000_000
    monkeypatch.setattr(reset.time, "time", lambda: now)
    response = HttpResponse()
    reset.write_ticket(_state(config), response, ticket(expires=now + 600))
    assert _max_age(response) == 600 + REMEMBER_LINKS
    response = HttpResponse()
    reset.write_ticket(_state(config), response, ticket(expires=now - 30))
    assert _max_age(response) == REMEMBER_LINKS
    # A project's own Max-Age for the cookie (WEBAUTH["cookies"]) stands.
    response = HttpResponse()
    reset.write_ticket(_state(config, max_age=120), response, ticket(expires=now + 600))
    assert _max_age(response) == 120


def test_a_used_cookie_keeps_its_links_for_their_memory(site, monkeypatch):
    from django.http import HttpResponse

    from webauth.flows.email import REMEMBER_LINKS

    config = site()
    _with_payload(monkeypatch, None)
    response = HttpResponse()
    reset.write_used(_state(config), response, "/after/", done=True)
    assert _max_age(response) == REMEMBER_LINKS
    response = HttpResponse()
    reset.write_used(_state(config, max_age=120), response, "/after/", done=False)
    assert _max_age(response) == 120


def test_a_link_is_among_those_asked_for_only_when_one_matches():
    from webauth.flows.email import link_fingerprint

    links = [link_fingerprint("first"), link_fingerprint("second")]
    assert reset._among(link_fingerprint("second"), links) is True
    assert reset._among(link_fingerprint("third"), links) is False
    assert reset._among(link_fingerprint("first"), []) is False


def test_the_current_link_is_the_tickets_first():
    from webauth.flows.email import link_fingerprint

    current = ticket(links=(link_fingerprint("new"), link_fingerprint("old")))
    assert reset.is_current_link(current, "new") is True
    assert reset.is_current_link(current, "old") is False
    assert reset.is_current_link(current, "other") is False
    assert reset.is_current_link(ticket(), "new") is False  # no link asked for
    for token in (None, 5):
        assert reset.is_current_link(current, token) is False
    # An empty token and one over 512 characters are refused before any
    # fingerprint is compared, even when a ticket held theirs.
    for token in ("", "n" * 513):
        assert reset.is_current_link(ticket(links=(link_fingerprint(token),)), token) is False
    long_one = "n" * 512
    assert reset.is_current_link(ticket(links=(link_fingerprint(long_one),)), long_one) is True


def test_a_browser_asked_for_the_links_its_cookie_remembers(monkeypatch):
    from webauth.flows.email import link_fingerprint

    _with_payload(monkeypatch, {"used": True, "links": [link_fingerprint("old")]})
    assert reset.asked_for(object(), "old") is True
    assert reset.asked_for(object(), "other") is False
    for token in (None, 5, "", "o" * 513):
        assert reset.asked_for(object(), token) is False
    # Refused before any fingerprint is compared, even when the cookie held theirs.
    _with_payload(monkeypatch, {"links": [link_fingerprint(""), link_fingerprint("o" * 513)]})
    for token in ("", "o" * 513):
        assert reset.asked_for(object(), token) is False
    _with_payload(monkeypatch, {"links": [link_fingerprint("o" * 512)]})
    assert reset.asked_for(object(), "o" * 512) is True
    _with_payload(monkeypatch, None)
    assert reset.asked_for(object(), "old") is False


# -- asking, called directly ----------------------------------------------------------------


@pytest.fixture
def asking(site, rf, monkeypatch):
    """``reset.ask`` on a request of its own; what it handed the outbox."""
    from webauth.state import AuthState

    handed = []
    monkeypatch.setattr(
        reset.outbox, "submit", lambda message, logger, *, send: handed.append((message, send))
    )
    requests = []  # AuthState holds its request weakly

    def ask(typed, *, earlier=(), providers=None):
        config = site(providers=providers)
        request = rf.post("/auth/reset", {"identifier": typed})
        requests.append(request)
        return reset.ask(AuthState(request, config), typed, "/after/", earlier=earlier)

    ask.handed = handed
    return ask


def _token_of(message):
    from urllib.parse import parse_qs, urlsplit

    (url,) = [w for w in message.body.split() if "/reset/confirm?" in w]
    return parse_qs(urlsplit(url).query)["token"][0]


def test_asking_gives_a_fresh_ticket_with_the_new_link_first(asking, alice):
    from webauth.flows.email import LINKS_KEPT, link_fingerprint

    earlier = tuple(link_fingerprint(f"earlier {n}") for n in range(LINKS_KEPT + 2))
    fresh = asking("alice@example.com", earlier=earlier)
    ((message, send),) = asking.handed
    assert send is True and message.to == ["alice@example.com"]
    assert (fresh.identifier, fresh.callback_url, fresh.attempts) == (
        "alice@example.com",
        "/after/",
        0,
    )
    # 32 random bytes, URL-safe: 43 characters binding the grant to this browser.
    assert len(fresh.binding) == 43
    assert fresh.links == (link_fingerprint(_token_of(message)), *earlier[: LINKS_KEPT - 1])
    from webauth.models import VerificationToken

    (row,) = VerificationToken.objects.all()  # the grant, whose expiry the ticket carries
    assert fresh.expires == int(row.expires.timestamp())
    assert 86390 < fresh.expires - time.time() <= 86400  # the email provider's max_age


def test_asking_for_nobody_builds_a_message_to_no_one(asking, alice):
    fresh = asking("nobody@example.com")
    ((message, send),) = asking.handed
    assert send is False and message.to == [reset._DECOY_ADDRESS]
    assert fresh.attempts == 0 and len(fresh.binding) == 43 and len(fresh.links) == 1


def test_an_account_without_an_address_is_asked_for_like_nobody(asking, db):
    get_user_model().objects.create_user("bob", email="", password=OLD)
    asking("bob")
    ((message, send),) = asking.handed
    assert send is False and message.to == [reset._DECOY_ADDRESS]


def test_the_messages_context(site, rf, monkeypatch):
    from dataclasses import asdict
    from datetime import UTC, datetime, timedelta

    from webauth.state import AuthState

    config = site(theme={"brand_color": "#123456"})
    request = rf.post("/auth/reset")
    state = AuthState(request, config)
    email = reset.grant_email(config)
    seen = []
    monkeypatch.setattr(
        reset.mail, "message", lambda name, context, *args, **kwargs: seen.append((name, context))
    )
    now = datetime.now(UTC)
    for expires, minutes in (
        (now + timedelta(seconds=3600), 60),
        (now + timedelta(seconds=61), 2),
        (now + timedelta(seconds=20), 1),
        (now - timedelta(seconds=90), 1),  # never less than a minute
    ):
        seen.clear()
        reset._message(
            state, email, "alice@example.com", "http://testserver/x?token=t", "C", expires
        )
        ((name, context),) = seen
        assert name == "password_reset"
        assert context["url"] == "http://testserver/x?token=t" and context["host"] == "testserver"
        assert context["code"] == email.display_code("C")
        assert context["expires"] == expires and context["minutes"] == minutes
        assert (
            context["theme"] == asdict(config.theme)
            and context["theme"]["brand_color"] == "#123456"
        )


# -- the outbox's thread --------------------------------------------------------------------


def test_the_outbox_runs_one_thread_per_process(monkeypatch):
    import threading

    from django.core.mail import EmailMultiAlternatives

    from webauth.logger import AuthLogger

    box = reset.Outbox()
    message = EmailMultiAlternatives("s", "b", "from@example.com", ["nobody@invalid"])
    logger = AuthLogger()
    assert box._thread is None
    assert box.submit(message, logger, send=False) is True
    first = box._thread
    assert first.name == "webauth-reset-outbox" and first.daemon and first.is_alive()
    assert box.submit(message, logger, send=False) is True
    assert box._thread is first  # the same thread takes the next one
    # In a forked worker the parent's thread does not exist: a new one starts.
    monkeypatch.setattr(reset.os, "getpid", lambda: 4_000_000)
    assert box.submit(message, logger, send=False) is True
    assert box._thread is not first and box._pid == 4_000_000
    second = box._thread
    # A thread that ended is replaced too.
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    box._thread = ended
    assert box.submit(message, logger, send=False) is True
    assert box._thread is not ended and box._thread is not second and box._thread.is_alive()
    assert box.flush()


class _Refusing:
    """A mail backend that fails as Django's SMTP backend does: unless told to be silent."""

    made = []

    def __init__(self, fail_silently=False, **kwargs):
        self.fail_silently = fail_silently
        _Refusing.made.append(fail_silently)

    def send_messages(self, messages):
        if not self.fail_silently:
            raise OSError("no mail server")
        return 0


def _log_of(caplog):
    return [r.getMessage() for r in caplog.records]


def test_the_outbox_logs_what_it_cannot_send_and_connects_for_a_decoy(settings, caplog):
    from django.core.mail import EmailMultiAlternatives

    from webauth.logger import AuthLogger

    settings.EMAIL_BACKEND = f"{__name__}._Refusing"
    _Refusing.made.clear()
    box = reset.Outbox()
    message = EmailMultiAlternatives("s", "b", "from@example.com", ["alice@example.com"])
    assert box.submit(message, AuthLogger(), send=True) is True
    assert box.flush()
    assert any("could not be sent" in m for m in _log_of(caplog))
    # A decoy's connection is made as a delivery's is (the same cost), never silent.
    caplog.clear()
    assert box.submit(message, AuthLogger(), send=False) is True
    assert box.flush()
    assert _Refusing.made == [False, False]
    assert not any("could not be sent" in m for m in _log_of(caplog))


def test_a_full_outbox_takes_nothing(monkeypatch, caplog):
    from django.core.mail import EmailMultiAlternatives

    from webauth.logger import AuthLogger

    monkeypatch.setattr(reset, "OUTBOX_LIMIT", 0)
    box = reset.Outbox()
    message = EmailMultiAlternatives("s", "b", "from@example.com", ["nobody@invalid"])
    assert box.submit(message, AuthLogger(), send=False) is False
    assert box._thread is None  # nothing was started for it
    assert any("outbox is full" in m for m in _log_of(caplog))


def test_flushing_waits_ten_seconds_at_most_by_default():
    box = reset.Outbox()
    waits = []

    class Recording:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def wait_for(self, predicate, timeout):
            waits.append(timeout)
            return predicate()

    real = box._idle
    box._idle = Recording()
    assert box.flush() is True and box.flush(0.5) is True
    assert waits == [10.0, 0.5]
    # A message that does not go makes flush answer False once its time is up.
    box._idle = real
    box._waiting = 1  # one handed over and never done
    assert box.flush(0.05) is False


@pytest.mark.parametrize(("first", "second"), [(5, 5), (None, "x"), ("x", ["x"])])
def test_a_password_that_is_no_text_is_no_password(first, second):
    with pytest.raises(PasswordRefused) as refused:
        reset._check_password(None, first, second)
    errors = refused.value.errors
    if not isinstance(first, str):
        assert errors["new_password1"] == ["This field is required."]
    if not isinstance(second, str):
        assert errors["new_password2"] == ["This field is required."]


# -- redeeming, called directly -------------------------------------------------------------

NEW = "a brand new passphrase 42"
SHORT = {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}


@pytest.fixture
def flow(site, rf, monkeypatch):
    """``reset.ask`` and the redemptions on requests of their own, the message handed back."""
    import re
    from types import SimpleNamespace

    from webauth.state import AuthState

    handed = []
    monkeypatch.setattr(
        reset.outbox, "submit", lambda message, logger, *, send: handed.append(message)
    )
    config = site()
    requests = []  # AuthState holds its request weakly

    def state():
        request = rf.post("/auth/reset/confirm", REMOTE_ADDR="203.0.113.5")
        requests.append(request)
        return AuthState(request, config)

    def ask(typed):
        handed.clear()
        ticket = reset.ask(state(), typed, "/after/")
        (message,) = handed
        code = re.search(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body).group(0)
        return ticket, _token_of(message), code

    return SimpleNamespace(state=state, ask=ask, config=config)


def _password_of(user):
    return get_user_model().objects.get(pk=user.pk)


def test_a_link_or_a_code_sets_the_password_and_gives_the_user(flow, alice):
    ticket, token, _ = flow.ask("alice")
    user = reset.redeem_link(flow.state(), ticket, token, NEW, NEW)
    assert user.pk == alice.pk and user.check_password(NEW)
    assert _password_of(alice).check_password(NEW)
    ticket, _, code = flow.ask("alice")
    user = reset.redeem_code(flow.state(), ticket, code, OLD, OLD)
    assert user.pk == alice.pk and _password_of(alice).check_password(OLD)


def test_an_account_that_can_no_longer_reset_is_told_before_its_password_is_judged(
    flow, alice, settings
):
    from webauth.models import VerificationToken

    settings.AUTH_PASSWORD_VALIDATORS = [{**SHORT, "OPTIONS": {"min_length": 12}}]
    ticket, token, _ = flow.ask("alice")
    alice.is_active = False
    alice.save()
    with pytest.raises(reset.ResetExpired, match="can no longer reset it"):
        reset.redeem_link(flow.state(), ticket, token, "short", "short")
    assert VerificationToken.objects.count() == 1  # nothing was used
    assert _password_of(alice).check_password(OLD)


@pytest.mark.parametrize("way", ["link", "code"])
def test_a_grant_ends_at_its_expiry_to_the_second(flow, alice, way):
    from datetime import UTC, datetime, timedelta

    from freezegun import freeze_time

    with freeze_time(datetime(2030, 1, 1, tzinfo=UTC)) as frozen:
        ticket, token, code = flow.ask("alice")
        frozen.tick(timedelta(seconds=86400))  # the email provider's max_age, to the second
        assert ticket.expires == int(time.time())
        if way == "link":
            with pytest.raises(reset.ResetExpired):
                reset.redeem_link(flow.state(), ticket, token, NEW, NEW)
        else:
            with pytest.raises(WrongCode):
                reset.redeem_code(flow.state(), ticket, code, NEW, NEW)
    assert _password_of(alice).check_password(OLD)


def test_a_code_a_day_late_is_wrong(flow, alice):
    from datetime import UTC, datetime, timedelta

    from freezegun import freeze_time

    with freeze_time(datetime(2030, 1, 1, tzinfo=UTC)) as frozen:
        ticket, _, code = flow.ask("alice")
        frozen.tick(timedelta(days=2))
        with pytest.raises(WrongCode) as wrong:
            reset.redeem_code(flow.state(), ticket, code, NEW, NEW)
    assert wrong.value.ticket.attempts == 1
    assert _password_of(alice).check_password(OLD)


def test_a_decoys_code_guessed_right_resets_nothing(flow, alice, monkeypatch):
    known = Email().new_code()
    monkeypatch.setattr(Email, "new_code", lambda self: known)
    ticket, _, code = flow.ask("nobody@example.com")
    assert code.replace("-", "") == known  # the decoy's message was rendered with it
    with pytest.raises(reset.ResetExpired, match="belongs to no account"):
        reset.redeem_code(flow.state(), ticket, code, NEW, NEW)
    assert _password_of(alice).check_password(OLD)


def test_a_refused_password_after_a_right_code_gives_a_grant_of_the_clients_own(
    flow, alice, settings
):
    from dataclasses import replace

    from webauth.flows.email import LINKS_KEPT, link_fingerprint

    # Only a validator that looks at the user refuses it: after the code is used.
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"}
    ]
    ticket, _, code = flow.ask("alice")
    older = tuple(link_fingerprint(f"older {n}") for n in range(LINKS_KEPT))
    ticket = replace(ticket, attempts=2, links=ticket.links + older)
    with pytest.raises(PasswordRefused) as refused:
        reset.redeem_code(flow.state(), ticket, code, "alice@example.com", "alice@example.com")
    again = refused.value.ticket
    assert again.attempts == 0 and len(again.links) == LINKS_KEPT
    assert again.links == (link_fingerprint(refused.value.token), *ticket.links[: LINKS_KEPT - 1])
    user = reset.redeem_link(flow.state(), again, refused.value.token, NEW, NEW)
    assert user.check_password(NEW)


def test_a_password_of_the_longest_length_is_judged_by_the_validators():
    longest = "p" * reset.MAX_PASSWORD_LENGTH
    reset._check_password(None, longest, longest)  # accepted (no validator in these settings)
    with pytest.raises(PasswordRefused) as refused:
        reset._check_password(None, longest + "p", longest + "p")
    assert refused.value.errors == {"new_password1": ["This password is too long."]}


def test_a_user_the_adapter_cannot_find_gets_the_password_all_the_same(flow, alice, monkeypatch):
    ticket, token, _ = flow.ask("alice")
    looked_up = []
    monkeypatch.setattr(
        flow.config.storage.adapter, "get_user", lambda user_id: looked_up.append(user_id)
    )
    reset.redeem_link(flow.state(), ticket, token, NEW, NEW)
    assert looked_up == [str(alice.pk)] and _password_of(alice).check_password(NEW)


@pytest.mark.parametrize("late", [0, 60])
def test_an_expired_grant_an_adapter_gives_back_for_a_code_is_refused(
    flow, alice, monkeypatch, late
):
    # The adapter's contract is never to redeem an expired grant by code; the reset
    # checks the expiry again, for an adapter that breaks it.
    from datetime import UTC, datetime, timedelta

    from freezegun import freeze_time

    from webauth.types import VerificationToken

    now = datetime(2030, 1, 1, tzinfo=UTC)
    with freeze_time(now):
        ticket, _, code = flow.ask("alice")
        expired = VerificationToken(
            identifier="x", token="t", expires=now - timedelta(seconds=late)
        )
        monkeypatch.setattr(
            flow.config.storage.adapter, "use_verification_code", lambda *args: expired
        )
        with pytest.raises(WrongCode):
            reset.redeem_code(flow.state(), ticket, code, NEW, NEW)
    assert _password_of(alice).check_password(OLD)
