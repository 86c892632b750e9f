"""Security keys as a second factor: added in the account center, used at sign-in.

The browser's part is played by the tests' software authenticator
(tests/support/authenticator.py, its own CTAP2/WebAuthn implementation);
py_webauthn verifies on the server. A key is non-discoverable by default here
(what a plain USB security key makes) and without user verification: a second
factor needs neither.
"""

from __future__ import annotations

import json
import re
import time
from html import unescape

import pytest
from django.core import mail
from django.test import Client
from freezegun import freeze_time
from jsonschema import ValidationError

from webauth.conf import get_config
from webauth.flows.webauthn import MFA_HANDLE_PREFIX
from webauth.mfa import factors
from webauth.models import SecondFactor, Session, WebAuthnChallenge
from webauth.test import force_sign_in

from .support.authenticator import SoftAuthenticator, unb64url
from .support.helpers import csrf_pair, session_cookie
from .support.mfa import at, mfa_settings, person, race
from .support.openapi_schemas import fits

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
ORIGIN = "http://testserver"
PAGE = "/account/security/"
NOW = float(int(time.time()))


@pytest.fixture(autouse=True)
def _now():
    """NOW is each test's own start: set at import, a long suite would reach the module
    minutes later, and keys confirmed at the real time would outrun codes made for it."""
    global NOW
    NOW = float(int(time.time()))


@pytest.fixture
def site(settings):
    def configure(**mfa):
        settings.WEBAUTH = mfa_settings(bearer=True, mfa={"enabled": True, **mfa})

    configure()
    return configure


@pytest.fixture
def ada(db):
    return person("ada")


@pytest.fixture
def bob(db):
    return person("bob")


def signed_in(user) -> Client:
    client = Client(HTTP_USER_AGENT="Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36")
    with freeze_time(at(NOW)):
        force_sign_in(client, user)
    return client


def options_on(response) -> dict:
    """The options a page carries for passkeys.js (its json_script)."""
    match = re.search(
        r'<script id="webauth-key-options" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert match, "no security-key options on the page"
    return json.loads(unescape(match.group(1)))


def binding_on(response) -> str:
    match = re.search(r'name="binding" value="([^"]+)"', response.content.decode())
    assert match
    return match.group(1)


def begin(client) -> tuple[dict, str]:
    with freeze_time(at(NOW)):
        response = client.post(PAGE, {"op": "key_begin"})
    assert response.status_code == 200
    return options_on(response), binding_on(response)


def add(client, answer, binding, name=""):
    with freeze_time(at(NOW)):
        return client.post(
            PAGE,
            {"op": "key_add", "credential": json.dumps(answer), "binding": binding, "name": name},
            follow=True,
        )


def add_security_key(user, authenticator=None, **create) -> SoftAuthenticator:
    """A security key of *user*, added through the account center; its authenticator."""
    authenticator = authenticator or SoftAuthenticator(backup_eligible=False, backed_up=False)
    client = signed_in(user)
    options, binding = begin(client)
    answer = authenticator.create(
        options, origin=ORIGIN, **{"uv": False, "discoverable": False, **create}
    )
    response = add(client, answer, binding)
    assert response.status_code == 200, response.content
    assert "The security key was added." in response.content.decode()
    return authenticator


def first_factor(client):
    token = csrf_pair(client)
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "ada", "password": PASSWORD, "callbackUrl": "/landing"},
    )


def second_factor_page(client):
    response = client.get("/auth/mfa")
    assert response.status_code == 200
    return response


def send_key(client, answer):
    return client.post(
        "/auth/mfa", {"csrfToken": csrf_pair(client), "credential": json.dumps(answer)}
    )


# -- adding a key ------------------------------------------------------------------------------


def test_adding_a_key_asks_for_a_non_discoverable_credential_and_shows_recovery_codes(site, ada):
    client = signed_in(ada)
    options, binding = begin(client)
    assert options["rp"]["id"] == "testserver"
    selection = options["authenticatorSelection"]
    assert selection["residentKey"] == "discouraged"
    assert selection["userVerification"] == "preferred"
    # Never the user's id: a random handle marked as a second factor's.
    assert unb64url(options["user"]["id"]).startswith(MFA_HANDLE_PREFIX)
    assert options["user"]["name"] == "ada@example.com"

    authenticator = SoftAuthenticator(backup_eligible=False, backed_up=False)
    answer = authenticator.create(options, origin=ORIGIN, uv=False, discoverable=False)
    response = add(client, answer, binding, name="Blue key")
    body = response.content.decode()
    assert response.status_code == 200 and "The security key was added." in body
    assert len(re.findall(r"<li><code>", body)) == 10  # the first key: recovery codes, once

    [factor] = SecondFactor.objects.filter(user=ada)
    assert (factor.kind, factor.name, factor.confirmed, factor.last_step) == (
        "webauthn",
        "Blue key",
        True,
        0,
    )
    # Sealed: neither the credential id nor the public key is in the clear.
    (credential,) = authenticator.credentials.values()
    assert credential.id_b64url not in factor.secret
    assert "Security key" in client.get(PAGE).content.decode()
    [notice] = mail.outbox
    assert "A security key was added to your account on testserver" in notice.body


def test_a_key_without_a_name_is_named_after_the_browser(site, ada):
    add_security_key(ada)
    assert SecondFactor.objects.get(user=ada).name == "Chrome on Linux"


def test_adding_a_key_needs_a_fresh_session(site, ada):
    client = signed_in(ada)
    with freeze_time(at(NOW + 3 * 3600)):
        response = client.post(PAGE, {"op": "key_begin"})
    assert response.status_code == 302 and "/account/reauthenticate/" in response["Location"]
    assert not WebAuthnChallenge.objects.exists()


def test_a_registration_is_used_once_and_only_by_the_user_it_was_made_for(site, ada, bob):
    client = signed_in(ada)
    options, binding = begin(client)
    answer = SoftAuthenticator().create(options, origin=ORIGIN, uv=False, discoverable=False)
    # Bob posts Ada's answer with her binding: the challenge is hers.
    refused = add(signed_in(bob), answer, binding)
    assert "The security key could not be added." in refused.content.decode()
    # The attempt spent it: Ada cannot use it any more either.
    again = add(client, answer, binding)
    assert "The security key could not be added." in again.content.decode()
    assert not SecondFactor.objects.exists()


def test_a_registration_for_another_site_or_binding_is_refused(site, ada):
    client = signed_in(ada)
    options, binding = begin(client)
    elsewhere = SoftAuthenticator().create(options, origin="https://evil.example", uv=False)
    assert "could not be added" in add(client, elsewhere, binding).content.decode()
    options, binding = begin(client)
    answer = SoftAuthenticator().create(options, origin=ORIGIN, uv=False)
    assert "could not be added" in add(client, answer, "x" * 43).content.decode()
    assert "could not be added" in add(client, "not json", binding).content.decode()
    assert not SecondFactor.objects.exists()


def test_the_same_key_is_not_added_twice(site, ada):
    authenticator = add_security_key(ada)
    (credential,) = authenticator.credentials.values()
    client = signed_in(ada)
    options, binding = begin(client)
    assert [c["id"] for c in options["excludeCredentials"]] == [credential.id_b64url]
    # An authenticator that ignores excludeCredentials makes the same id again.
    answer = authenticator.create(options, origin=ORIGIN, uv=False, credential_id=credential.id)
    assert "could not be added" in add(client, answer, binding).content.decode()
    assert SecondFactor.objects.filter(user=ada).count() == 1


def test_with_security_keys_off_none_is_added_but_those_added_still_work(site, ada):
    authenticator = add_security_key(ada)
    site(security_keys=False)
    client = signed_in(ada)
    assert 'value="key_begin"' not in client.get(PAGE).content.decode()
    with freeze_time(at(NOW)):
        refused = client.post(PAGE, {"op": "key_begin"}, follow=True)
    assert "Unknown action." in refused.content.decode()

    browser = Client()
    first_factor(browser)
    options = options_on(second_factor_page(browser))
    answer = authenticator.get(options, origin=ORIGIN, uv=False)
    assert session_cookie(send_key(browser, answer))


# -- signing in with it ------------------------------------------------------------------------


def test_a_key_finishes_the_sign_in_and_the_session_says_hwk(site, ada):
    authenticator = add_security_key(ada)
    (credential,) = authenticator.credentials.values()
    client = Client()
    assert first_factor(client)["Location"] == "http://testserver/auth/mfa"
    page = second_factor_page(client)
    assert "Use your security key" in page.content.decode()
    assert "Or enter one of your recovery codes." in page.content.decode()  # no app
    options = options_on(page)
    assert [c["id"] for c in options["allowCredentials"]] == [credential.id_b64url]
    assert options["userVerification"] == "preferred" and options["rpId"] == "testserver"

    response = send_key(client, authenticator.get(options, origin=ORIGIN, uv=False))
    assert response.status_code == 302 and response["Location"] == "http://testserver/landing"
    assert session_cookie(response)
    # The database session (the ORM adapter's default strategy) records the methods.
    assert Session.objects.latest("pk").amr == "pwd hwk mfa"
    factor = SecondFactor.objects.get(user=ada)
    assert factor.last_step == 1 and factor.last_used_at is not None


def test_an_assertion_is_used_once_and_only_by_the_sign_in_it_was_asked_for(site, ada):
    authenticator = add_security_key(ada)
    client = Client()
    first_factor(client)
    options = options_on(second_factor_page(client))
    answer = authenticator.get(options, origin=ORIGIN, uv=False)
    # Another held sign-in of the same user (another browser) cannot use it.
    other = Client()
    first_factor(other)
    second_factor_page(other)
    refused = send_key(other, answer)
    assert refused.status_code == 400
    assert "The security key could not be verified." in refused.content.decode()
    assert session_cookie(refused) is None
    # Bound to the first browser's sign-in: another's try spent nothing of it.
    assert session_cookie(send_key(client, answer))
    # And used once: the same answer again (a replay) finds no challenge.
    replay = Client()
    first_factor(replay)
    second_factor_page(replay)
    assert session_cookie(send_key(replay, answer)) is None


def test_a_cloned_keys_count_and_a_bad_signature_are_refused(site, ada):
    authenticator = add_security_key(ada)
    client = Client()
    first_factor(client)
    assert session_cookie(
        send_key(client, authenticator.get(options_on(second_factor_page(client)), origin=ORIGIN))
    )
    # A clone of the key still says 1: the count did not go up.
    clone = Client()
    first_factor(clone)
    options = options_on(second_factor_page(clone))
    assert (
        session_cookie(send_key(clone, authenticator.get(options, origin=ORIGIN, sign_count=1)))
        is None
    )
    options = options_on(second_factor_page(clone))
    tampered = authenticator.get(options, origin=ORIGIN, tamper_signature=True)
    assert session_cookie(send_key(clone, tampered)) is None
    assert SecondFactor.objects.get(user=ada).last_step == 1


def test_a_key_that_keeps_no_counter_signs_in_again_and_again(site, ada):
    authenticator = add_security_key(ada, SoftAuthenticator(counter_step=0))
    for _ in range(2):
        client = Client()
        first_factor(client)
        options = options_on(second_factor_page(client))
        assert session_cookie(send_key(client, authenticator.get(options, origin=ORIGIN)))
    factor = SecondFactor.objects.get(user=ada)
    assert factor.last_step == 0 and factor.last_used_at is not None


def test_another_users_key_does_not_prove_adas_second_factor(site, ada, bob):
    add_security_key(ada)
    bobs = add_security_key(bob)
    client = Client()
    first_factor(client)
    options = options_on(second_factor_page(client))
    (credential,) = bobs.credentials.values()
    answer = bobs.get(options, origin=ORIGIN, credential=credential)
    refused = send_key(client, answer)
    assert refused.status_code == 400 and session_cookie(refused) is None
    page = refused.content.decode()
    # Said beside the key's button, not on the code field (no code was wrong).
    assert re.search(
        r'data-webauth-passkey-error data-error="SecondFactor">The security key could not be '
        r"verified\. Try again, or enter a code\.</div>",
        page,
    )
    assert 'aria-invalid="true"' not in page


def test_a_key_answer_counts_as_a_wrong_attempt(site, ada):
    authenticator = add_security_key(ada)
    site(attempts=2)
    client = Client()
    first_factor(client)
    for expected in (400, 302):
        options = options_on(second_factor_page(client))
        bad = authenticator.get(options, origin=ORIGIN, tamper_signature=True)
        assert send_key(client, bad).status_code == expected
    # The held sign-in is gone after the limit: back to the sign-in page.
    assert "error=SecondFactorExpired" in client.get("/auth/mfa")["Location"]


def test_one_held_sign_in_asks_for_a_bounded_number_of_challenges(site, ada):
    add_security_key(ada)
    client = Client()
    first_factor(client)
    for _ in range(10):
        options_on(second_factor_page(client))
    assert 'id="webauth-key-options"' not in second_factor_page(client).content.decode()
    assert WebAuthnChallenge.objects.filter(ceremony="mfa-authenticate").count() == 10


def test_the_page_of_a_user_without_a_key_asks_for_none(site, ada):
    from .support.mfa import add_key

    add_key(ada)
    client = Client()
    first_factor(client)
    page = second_factor_page(client).content.decode()
    assert "Use your security key" not in page and not WebAuthnChallenge.objects.exists()
    assert "Enter the code from your authenticator app" in page


@pytest.mark.django_db(transaction=True)
def test_twenty_simultaneous_answers_with_one_assertion_make_one_session(site, ada):
    authenticator = add_security_key(ada, SoftAuthenticator(counter_step=0))
    client = Client()
    first_factor(client)
    options = options_on(second_factor_page(client))
    answer = json.dumps(authenticator.get(options, origin=ORIGIN))
    answers = race(client, [{"credential": answer}] * 20)
    assert len([a for a in answers if session_cookie(a)]) == 1


# -- not a passkey -----------------------------------------------------------------------------


def test_a_discoverable_second_factor_key_offered_as_a_passkey_is_refused_not_forgotten(
    settings, site, ada
):
    authenticator = add_security_key(ada, discoverable=True)
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "experimental": {"enable_webauthn": True},
        "providers": ["webauth.providers.DjangoCredentials", "webauth.providers.Passkey"],
    }
    client = Client()
    options = client.get("/auth/webauthn-options/passkey?action=authenticate").json()["options"]
    answer = authenticator.get(options, origin=ORIGIN)
    response = client.post(
        "/auth/callback/passkey",
        {"csrfToken": csrf_pair(client), "action": "authenticate", "data": json.dumps(answer)},
        HTTP_X_AUTH_RETURN_REDIRECT="1",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "WebAuthnVerificationError"
    # Not "unknown": the browser must not be told to delete the user's key.
    assert "unknownCredential" not in body
    assert session_cookie(response) is None


# -- removing it -------------------------------------------------------------------------------


def test_removing_a_key_tells_the_owner_and_the_last_one_stays_when_required(site, ada):
    add_security_key(ada)
    factor = SecondFactor.objects.get(user=ada)
    site(required="all")
    client = signed_in(ada)
    with freeze_time(at(NOW)):
        kept = client.post(PAGE, {"op": "remove", "factor": factor.pk}, follow=True)
    assert "add another key before you remove this one" in kept.content.decode()
    assert SecondFactor.objects.filter(pk=factor.pk).exists()

    site()
    mail.outbox.clear()
    with freeze_time(at(NOW)):
        removed = client.post(PAGE, {"op": "remove", "factor": factor.pk}, follow=True)
    assert "The key was removed." in removed.content.decode()
    assert not SecondFactor.objects.exists()
    assert factors.recovery_codes_left(get_config(), ada.pk) == 0
    [notice] = mail.outbox
    assert "A security key was removed from your account on testserver" in notice.body


# -- apps --------------------------------------------------------------------------------------


def call(path, body):
    response = Client().post(path, json.dumps(body), content_type="application/json")
    assert not response.cookies, "an app route set a cookie"
    return response


def test_an_app_finishes_the_sign_in_with_a_key_as_the_openapi_description_says(site, ada):
    authenticator = add_security_key(ada)
    step = call("/auth/app/signin/credentials", {"username": "ada", "password": PASSWORD}).json()
    fits(step, "SecondFactorStep")
    assert step["methods"] == ["webauthn", "recovery_code"]
    handle = step["mfaToken"]
    asked = {"mfaToken": handle, "action": "webauthn-options"}
    fits(asked, "AppSecondFactor")
    answer = call("/auth/app/mfa", asked)
    assert answer.status_code == 200
    fits(answer.json(), "SecurityKeyOptions")
    options = answer.json()["options"]
    assert options["allowCredentials"] and options["rpId"] == "testserver"
    proof = {"mfaToken": handle, "credential": authenticator.get(options, origin=ORIGIN, uv=False)}
    fits(proof, "AppSecondFactor")
    done = call("/auth/app/mfa", proof)
    assert done.status_code == 200 and done.json()["sessionToken"]
    fits(done.json(), "SessionToken")
    # Both a code and a key at once is not one of the described bodies.
    with pytest.raises(ValidationError):
        fits({"mfaToken": handle, "code": "123456", "credential": {}}, "AppSecondFactor")


def test_an_apps_options_need_a_held_sign_in_with_a_key(site, ada):
    missing = call("/auth/app/mfa", {"mfaToken": "x" * 43, "action": "webauthn-options"})
    assert missing.status_code == 401 and missing.json()["error"] == "SecondFactorExpired"
    from .support.mfa import add_key

    add_key(ada)
    step = call("/auth/app/signin/credentials", {"username": "ada", "password": PASSWORD}).json()
    assert step["methods"] == ["totp", "recovery_code"]
    none = call("/auth/app/mfa", {"mfaToken": step["mfaToken"], "action": "webauthn-options"})
    assert none.status_code == 401 and none.json()["error"] == "SecondFactorFailed"


def test_a_browsers_key_challenge_is_not_an_apps(site, ada):
    authenticator = add_security_key(ada)
    client = Client()
    first_factor(client)
    options = options_on(second_factor_page(client))
    answer = authenticator.get(options, origin=ORIGIN)
    step = call("/auth/app/signin/credentials", {"username": "ada", "password": PASSWORD}).json()
    refused = call("/auth/app/mfa", {"mfaToken": step["mfaToken"], "credential": answer})
    assert refused.status_code == 401 and refused.json()["error"] == "SecondFactorFailed"
