"""A policy that requires a second factor (``WEBAUTH["mfa"]["required"]``).

A user the policy names who has no key is held after the first factor, adds
an authenticator app on ``/auth/mfa`` (its QR code, its key, a code from it)
and only then gets a session, with the first recovery codes shown once. No
session exists before, so nothing else on the site is reachable.
"""

from __future__ import annotations

import json
import re
import time
from types import SimpleNamespace

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from freezegun import freeze_time

from webauth.conf import build_config, get_config
from webauth.mfa import factors

from .support.helpers import csrf_pair, session_cookie
from .support.mfa import at

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
NOW = float(int(time.time()))

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _now():
    """NOW is each test's own start: set at import, a long suite would reach the module
    minutes later, and keys confirmed at the real time would outrun codes made for it."""
    global NOW
    NOW = float(int(time.time()))


def only_named_grace(user) -> bool:
    """A project's own rule (a dotted path in the tests' settings)."""
    return getattr(user, "username", "") == "grace"


@pytest.fixture
def site(settings):
    def configure(required, **extra):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "bearer": True,
            "providers": ["webauth.providers.DjangoCredentials"],
            "mfa": {"enabled": True, "required": required},
            **extra,
        }

    return configure


@pytest.fixture
def people(db):
    users = get_user_model().objects
    return {
        "staff": users.create_user("ada", "ada@example.com", PASSWORD, is_staff=True),
        "member": users.create_user("grace", "grace@example.com", PASSWORD),
        "other": users.create_user("linus", "linus@example.com", PASSWORD),
    }


def first_factor(client, username):
    return client.post(
        "/auth/callback/credentials",
        {
            "csrfToken": csrf_pair(client),
            "username": username,
            "password": PASSWORD,
            "callbackUrl": "/landing",
        },
    )


def shown_key(response) -> str:
    match = re.search(r"data-key>([A-Z2-7 ]+)</code>", response.content.decode())
    assert match, "no key on the page"
    return match.group(1).replace(" ", "")


def test_a_staff_member_without_a_key_adds_one_before_the_session(site, people):
    site("staff")
    client = Client()
    with freeze_time(at(NOW)):
        held = first_factor(client, "ada")
        assert held["Location"].endswith("/auth/mfa") and session_cookie(held) is None
        assert client.get("/auth/session").json() is None  # nothing reachable yet
        page = client.get("/auth/mfa")
        assert b"Your account needs two-step verification." in page.content
        assert b"<svg" in page.content
        key = shown_key(page)
        assert shown_key(client.get("/auth/mfa")) == key  # reloaded: the same key

        wrong = client.post(
            "/auth/mfa",
            {
                "csrfToken": csrf_pair(client),
                "code": "000000" if pyotp.TOTP(key).now() != "000000" else "111111",
            },
        )
        assert wrong.status_code == 400 and shown_key(wrong) == key
        assert factors.confirmed_factors(get_config(), people["staff"].pk) == []

        done = client.post(
            "/auth/mfa", {"csrfToken": csrf_pair(client), "code": pyotp.TOTP(key).at(NOW)}
        )
        assert done.status_code == 200
        assert session_cookie(done)
        codes = re.findall(r"<li><code>([0-9a-z-]+)</code></li>", done.content.decode())
        assert len(codes) == 10
        assert b'href="http://testserver/landing"' in done.content
    assert client.get("/auth/session").json()["user"]["email"] == "ada@example.com"
    assert len(factors.confirmed_factors(get_config(), people["staff"].pk)) == 1
    assert factors.recovery_codes_left(get_config(), people["staff"].pk) == 10


def test_the_others_sign_in_as_before(site, people):
    site("staff")
    assert session_cookie(first_factor(Client(), "linus"))


@pytest.mark.parametrize(
    ("required", "held"),
    [
        ("all", {"ada", "grace", "linus"}),
        ("staff", {"ada"}),
        ("superusers", set()),
        ({"groups": ["admins"]}, {"grace"}),
        ("tests.test_mfa_policy.only_named_grace", {"grace"}),
    ],
)
def test_whom_each_policy_names(site, people, required, held):
    Group.objects.create(name="admins").user_set.add(people["member"])
    site(required)
    asked = set()
    for name in ("ada", "grace", "linus"):
        if session_cookie(first_factor(Client(), name)) is None:
            asked.add(name)
    assert asked == held


def test_an_app_adds_the_key_it_is_given_and_gets_the_recovery_codes(site, people):
    site("staff")
    with freeze_time(at(NOW)):
        step = (
            Client()
            .post(
                "/auth/app/signin/credentials",
                json.dumps({"username": "ada", "password": PASSWORD}),
                content_type="application/json",
            )
            .json()
        )
        assert step["step"] == "second_factor" and step["methods"] == ["totp"]
        key = re.search(r"secret=([A-Z2-7]+)", step["enrolment"]["uri"]).group(1)
        assert key == step["enrolment"]["key"]
        done = Client().post(
            "/auth/app/mfa",
            json.dumps({"mfaToken": step["mfaToken"], "code": pyotp.TOTP(key).at(NOW)}),
            content_type="application/json",
        )
        assert done.status_code == 200
        answer = done.json()
        assert answer["sessionToken"] and len(answer["recoveryCodes"]) == 10


@pytest.mark.parametrize(
    "required",
    ["everyone", "", {"groups": []}, {"groups": [""]}, {"group": ["admins"]}, "no.such.module", 3],
)
def test_a_policy_webauth_cannot_read_is_refused_at_start_up(required):
    with pytest.raises(ImproperlyConfigured, match=r"mfa\.required"):
        build_config({"secret": SECRET, "mfa": {"enabled": True, "required": required}}, {}.get)


def test_a_grace_period_lets_the_user_put_it_off_until_it_ends(site, people, settings):
    site("staff")
    settings.WEBAUTH = {**settings.WEBAUTH, "mfa": {**settings.WEBAUTH["mfa"], "grace_days": 7}}
    client = Client()
    with freeze_time(at(NOW)) as clock:
        first_factor(client, "ada")
        page = client.get("/auth/mfa").content.decode()
        assert "You can put this off for 7 more days." in page
        later = client.post("/auth/mfa", {"csrfToken": csrf_pair(client), "later": "1"})
        assert later["Location"] == "http://testserver/landing" and session_cookie(later)
        assert client.get("/auth/session").json()["user"]["email"] == "ada@example.com"
        assert factors.confirmed_factors(get_config(), people["staff"].pk) == []

        clock.tick(6 * 86400)  # the clock started at the first time she was asked
        other = Client()
        first_factor(other, "ada")
        assert "You can put this off for 1 more day." in other.get("/auth/mfa").content.decode()

        clock.tick(86400)
        late = Client()
        first_factor(late, "ada")
        assert "put this off" not in late.get("/auth/mfa").content.decode()
        refused = late.post("/auth/mfa", {"csrfToken": csrf_pair(late), "later": "1"})
        assert refused["Location"].endswith("error=SecondFactorExpired")
        assert session_cookie(refused) is None


def test_without_a_grace_period_it_cannot_be_put_off(site, people):
    site("staff")
    client = Client()
    with freeze_time(at(NOW)):
        first_factor(client, "ada")
        assert "put this off" not in client.get("/auth/mfa").content.decode()
        refused = client.post("/auth/mfa", {"csrfToken": csrf_pair(client), "later": "1"})
        assert refused["Location"].endswith("error=SecondFactorExpired")


# -- the setting read into a function of the user (webauth.mfa.policy) ---------------------------


def test_each_form_of_the_setting_names_its_users(people, db):
    from django.utils.module_loading import import_string

    from webauth.mfa.policy import KEYWORDS, django_user, requirement
    from webauth.types import AdapterUser

    root = get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    Group.objects.create(name="admins").user_set.add(people["member"])
    ada, grace, linus = people["staff"], people["member"], people["other"]
    assert KEYWORDS == ("all", "staff", "superusers")
    assert requirement(None, import_string) is None
    assert requirement(False, import_string) is None

    def named(setting):
        rule = requirement(setting, import_string)
        return {u.username for u in (ada, grace, linus, root) if rule(u)}

    assert named("all") == {"ada", "grace", "linus", "root"}
    assert named("staff") == {"ada", "root"}
    assert named("superusers") == {"root"}
    assert named({"groups": ["admins"]}) == {"grace", "root"}  # superusers have every right
    assert named("tests.test_mfa_policy.only_named_grace") == {"grace"}

    # An adapter's record stands for its model instance; a record without one
    # (or any other object) for itself, which is nobody's staff or member.
    record = AdapterUser(id=str(ada.pk), instance=ada)
    assert django_user(record) is ada
    assert requirement("staff", import_string)(record)
    bare = AdapterUser(id="99", instance=None)
    assert django_user(bare) is bare
    assert not requirement("staff", import_string)(bare)
    assert not requirement("superusers", import_string)(bare)
    assert not requirement({"groups": ["admins"]}, import_string)(bare)
    assert requirement({"groups": ["admins"]}, import_string)(AdapterUser(id="1", instance=grace))
    # Something with a "groups" that is not Django's: no member of anything.
    assert not requirement({"groups": ["admins"]}, import_string)(SimpleNamespace(groups="admins"))


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("everyone", "is not one of all, staff, superusers, nor a dotted path"),
        ({"groups": []}, 'a dict must be {"groups": [<group name>, ...]}'),
        ({"groups": "admins"}, 'a dict must be {"groups": [<group name>, ...]}'),
        ({"group": ["admins"]}, 'a dict must be {"groups": [<group name>, ...]}'),
        ({"groups": ["admins"], "also": 1}, 'a dict must be {"groups": [<group name>, ...]}'),
        ({"groups": [""]}, "group names must be non-empty strings"),
        ({"groups": [3]}, "group names must be non-empty strings"),
        ("tests.test_mfa_policy.PASSWORD", "is not callable"),
    ],
)
def test_a_setting_that_names_nobody_says_why(setting, message):
    from django.utils.module_loading import import_string

    from webauth.mfa.policy import requirement

    with pytest.raises(ValueError, match=re.escape(message)):
        requirement(setting, import_string)
