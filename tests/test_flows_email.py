"""Email sign-in (issue 11) through the routes, with Django's locmem email backend.

One browser is one test ``Client``: the one that asked holds the pending cookie;
another client is "another browser" (or a mail scanner).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.checks import Error
from django.test import Client, RequestFactory
from freezegun import freeze_time

from webauth import jwt as jose
from webauth import sign_in as helper_sign_in
from webauth.checks import check_config
from webauth.flows.email import REMEMBER_LINKS, grant_hash, link_fingerprint
from webauth.models import Account, VerificationToken
from webauth.providers import DjangoCredentials, Email
from webauth.signals import account_linked, user_created, user_updated
from webauth.testing.memory import MemoryAdapter

from .support.helpers import csrf_pair, query

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PENDING = "authjs.email-pending"
SESSION = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"

pytestmark = pytest.mark.django_db


# -- the site ----------------------------------------------------------------------------------


@pytest.fixture
def site(settings):
    """An email provider (and a password one) on DjangoAdapter with JWT sessions."""

    def configure(*, email=None, **options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": ADAPTER,
            "session": {"strategy": "jwt"},
            "providers": [email or Email(from_email="Example <no-reply@example.com>")],
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse"
    )


def ask(client, email="alice@example.com", *, callback=None, json_client=False, **extra):
    """Ask for a sign-in email the way the built-in form does."""
    data = {"csrfToken": csrf_pair(client), "email": email}
    if callback is not None:
        data["callbackUrl"] = callback
    if json_client:
        return client.post(
            "/auth/signin/email",
            json.dumps(data),
            content_type="application/json",
            headers={"X-Auth-Return-Redirect": "1"},
            **extra,
        )
    return client.post("/auth/signin/email", data, **extra)


def last_mail():
    assert mail.outbox, "no email was sent"
    return mail.outbox[-1]


def link_of(message) -> str:
    urls = re.findall(r"https?://testserver/auth/callback/\w+\?\S+", message.body)
    assert len(urls) == 1, message.body
    return urls[0]


def code_of(message) -> str:
    found = re.findall(r"\b([0-9A-Z]{4}-[0-9A-Z]{4})\b", message.body)
    assert len(found) == 1, message.body
    return found[0]


def token_of(message) -> str:
    return query(link_of(message))["token"]


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


class Forms(HTMLParser):
    """Every form of a page: id, action and its inputs' name -> value."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict] = []
        self.inputs: list[dict] = []
        self.buttons: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form":
            self.forms.append({**attributes, "fields": {}})
        elif tag == "input":
            self.inputs.append(attributes)
            if self.forms and attributes.get("name"):
                self.forms[-1]["fields"][attributes["name"]] = attributes.get("value") or ""
        elif tag == "button":
            self.buttons.append(attributes)


def forms_of(response) -> Forms:
    parser = Forms()
    parser.feed(response.content.decode())
    return parser


def confirm(client, message, **overrides):
    """Open the link in *client* and press the confirmation page's button."""
    page = client.get(path_of(link_of(message)))
    assert page.status_code == 200
    forms = [f for f in forms_of(page).forms if f.get("id") == "webauth-email-confirm-form"]
    assert forms, page.content.decode()[:500]
    form = forms[0]
    return client.post(form["action"], {**form["fields"], **overrides})


def open_again(client, message):
    """GET the message's link in *client*: the answer (no confirmation page expected)."""
    return client.get(path_of(link_of(message)))


VERIFICATION = "http://testserver/auth/error?error=Verification"


def enter_code(client, code, **extra):
    page = client.get("/auth/verify-request?provider=email&type=email")
    forms = [f for f in forms_of(page).forms if f.get("id") == "webauth-email-code"]
    assert forms, page.content.decode()[:500]
    return client.post(forms[0]["action"], {**forms[0]["fields"], "code": code}, **extra)


def grants() -> int:
    return VerificationToken.objects.count()


def signed_in_as(response) -> str | None:
    morsel = response.cookies.get(SESSION)
    if morsel is None or not morsel.value:
        return None
    claims = jose.decode(token=morsel.value, secret=SECRET, salt=SESSION)
    return claims["email"] if claims else None


# -- asking for an email -------------------------------------------------------------------------


def test_asking_sends_one_message_with_the_link_and_the_code(client, site, alice):
    # A whole second, frozen: the grant's expiry is kept in whole seconds, so a
    # clock that ticks between writing it and the cookie would take a second off.
    with freeze_time(datetime(2030, 1, 1, tzinfo=UTC)):
        response = ask(client, callback="/after/")
        assert response.status_code == 302
        assert response["Location"] == (
            "http://testserver/auth/verify-request?provider=email&type=email"
        )
        assert len(mail.outbox) == 1
        message = last_mail()
        assert message.to == ["alice@example.com"]
        assert message.from_email == "Example <no-reply@example.com>"
        assert message.subject == "Sign in to testserver"
        link = link_of(message)
        # Auth.js's link: <base>/callback/<id>?callbackUrl=...&token=...&email=...
        assert list(query(link)) == ["callbackUrl", "token", "email"]
        assert query(link)["callbackUrl"] == "http://testserver/after/"
        assert query(link)["email"] == "alice@example.com"
        assert re.fullmatch(r"[0-9a-f]{64}", token_of(message))  # 256 bits
        code = code_of(message)
        assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}", code)
        html, mimetype = message.alternatives[0]
        assert mimetype == "text/html"
        assert link.replace("&", "&amp;") in html and code in html
        # The pending cookie: HttpOnly, Lax, as long as the grant and then the week
        # it remembers the link for.
        morsel = response.cookies[PENDING]
        assert morsel["httponly"] and morsel["samesite"] == "Lax" and morsel["path"] == "/"
        assert REMEMBER_LINKS == 7 * 86400
        assert morsel["max-age"] == str(86400 + REMEMBER_LINKS)
        payload = jose.decode(token=morsel.value, secret=SECRET, salt=PENDING)
        assert payload["provider"] == "email" and payload["identifier"] == "alice@example.com"
        assert payload["callbackUrl"] == "http://testserver/after/"
        assert payload["exp"] - payload["iat"] == 86400 + REMEMBER_LINKS
        (row,) = VerificationToken.objects.all()
        assert payload["expires"] == int(row.expires.timestamp())
        assert payload["links"] == [link_fingerprint(token_of(message))]


def test_only_hashes_are_stored(client, site, alice):
    ask(client)
    message = last_mail()
    token, code = token_of(message), code_of(message).replace("-", "")
    assert grants() == 1
    row = VerificationToken.objects.values().get()
    stored = " ".join(str(v) for v in row.values())
    hashed = [hashlib.sha256((v + SECRET).encode()).hexdigest() for v in (token, code)]
    for secret in (token, code, *hashed):
        assert secret not in stored


def test_the_address_is_normalised(client, site, alice):
    response = ask(client, "  Alice@EXAMPLE.com ")
    assert response.status_code == 302
    assert last_mail().to == ["alice@example.com"]
    # Fullwidth forms (NFKC) are the ASCII address they look like.
    ask(client, "\uff41lice\uff20example\uff0ecom")
    assert last_mail().to == ["alice@example.com"]


BAD_ADDRESSES = [
    "",
    "   ",
    "alice",
    "@example.com",
    "alice@",
    "alice@@example.com",
    "a@b@example.com",
    '"alice"@example.com',
    "alice@exa,mple.com",
    "alice,bob@example.com",
    "alice@example.com,bob@evil.example",
    "alice@example.com;bob@evil.example",
    "Alice <alice@example.com>",
    "alice @example.com",
    "alice@exa mple.com",
    "alice@example.com\r\nBcc: everyone@evil.example",
    "alice@example.com\nX-Injected: 1",
    "alice\x00@example.com",
    "alice@example.com\x07",
    "alice@\u202eexample.com",  # a bidi override
    "alice\u200b@example.com",  # zero width space
    "alice@.example.com",
    "alice@example..com",
    "alice@example.com.",
    "alice@[127.0.0.1]",
    "alice@(comment)example.com",
    "alice\\@example.com",
    "a" * 65 + "@example.com",
    "alice@" + "a" * 64 + ".com",
    "alice@" + ".".join(["a" * 60] * 5) + ".com",
    "x" * 2000,
    "javascript:alert(1)@example.com",
]


@pytest.mark.parametrize("address", BAD_ADDRESSES, ids=lambda a: ascii(a[:40]))
def test_a_bad_address_is_a_field_error(client, site, address):
    response = ask(client, address)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    page = forms_of(response)
    inputs = [i for i in page.inputs if i.get("name") == "email"]
    assert inputs and inputs[0].get("aria-invalid") == "true"
    assert "webauth-field-error" in response.content.decode()
    assert not mail.outbox and grants() == 0
    assert PENDING not in response.cookies


@pytest.mark.parametrize(
    "value", [["alice@example.com"], {"a": 1}, 42, None, True], ids=lambda v: repr(v)
)
def test_an_address_that_is_not_a_string(client, site, value):
    body = {"csrfToken": csrf_pair(client), "email": value}
    response = client.post("/auth/signin/email", json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert not mail.outbox and grants() == 0


def test_a_bad_address_typed_value_comes_back_escaped(client, site):
    response = ask(client, "<script>x</script>")
    assert response.status_code == 400
    assert b"<script>x</script>" not in response.content
    field = next(i for i in forms_of(response).inputs if i.get("name") == "email")
    assert field["value"] == "<script>x</script>"


def test_a_bad_address_for_json_clients_and_custom_pages(client, site):
    response = ask(client, "nope", json_client=True)
    assert response.status_code == 200
    assert response.json() == {
        "url": "http://testserver/auth/signin?error=EmailSignin&code=invalid_email"
    }
    page = client.get("/auth/signin?error=EmailSignin&code=invalid_email")
    assert "Enter a valid email address." in page.content.decode()
    site(pages={"sign_in": "/login/"})
    response = ask(client, "nope")
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/login/?error=EmailSignin&code=invalid_email"
    assert not mail.outbox


def test_the_same_answer_with_or_without_an_account(site, alice):
    answers = []
    for address in ("alice@example.com", "nobody@example.com"):
        client = Client()
        response = ask(client, address)
        message = last_mail()
        body = message.body.replace(link_of(message), "LINK").replace(code_of(message), "CODE")
        body = body.replace(address, "ADDRESS").replace(address.replace("@", "%40"), "ADDRESS")
        answers.append(
            (
                response.status_code,
                response["Location"],
                sorted(response.cookies),
                message.subject,
                body,
                len(message.alternatives),
            )
        )
    assert answers[0] == answers[1]
    assert grants() == 2
    assert get_user_model().objects.count() == 1  # nobody is created before the link is used


def test_the_sign_in_callback_sees_the_verification_request(client, site, alice):
    calls = []

    def sign_in(**kwargs):
        calls.append(kwargs)
        return True

    site(callbacks={"sign_in": sign_in})
    ask(client)
    ask(client, "nobody@example.com")
    known, unknown = calls
    assert known["email"] == {"verification_request": True}
    assert known["user"].id == str(alice.pk) and known["user"].email == "alice@example.com"
    assert known["account"] == {
        "providerAccountId": "alice@example.com",
        "userId": str(alice.pk),
        "type": "email",
        "provider": "email",
    }
    assert unknown["user"].email == "nobody@example.com" and unknown["user"].id
    assert unknown["account"]["userId"] == unknown["user"].id


def test_the_sign_in_callback_can_refuse_or_redirect(client, site, alice):
    site(callbacks={"sign_in": lambda **kw: False})
    response = ask(client)
    assert response["Location"] == "http://testserver/auth/error?error=AccessDenied"
    assert not mail.outbox and grants() == 0 and PENDING not in response.cookies
    site(callbacks={"sign_in": lambda **kw: "/waitlist/"})
    response = ask(client)
    assert response["Location"] == "http://testserver/waitlist/"
    assert not mail.outbox and grants() == 0


def test_asking_needs_csrf(client, site, alice):
    csrf_pair(client)
    response = client.post("/auth/signin/email", {"email": "alice@example.com"})
    assert response["Location"] == "http://testserver/auth/signin?error=MissingCSRF"
    assert not mail.outbox


def test_the_sign_in_page_has_the_email_form(client, site):
    response = client.get("/auth/signin")
    form = next(f for f in forms_of(response).forms if f.get("data-provider") == "email")
    assert form["action"] == "http://testserver/auth/signin/email"
    assert set(form["fields"]) == {"csrfToken", "callbackUrl", "email"}
    field = next(i for i in forms_of(response).inputs if i.get("name") == "email")
    assert field["type"] == "email" and field["autocomplete"] == "email"


# -- the link: GET and HEAD change nothing --------------------------------------------------------


def test_get_and_head_of_the_link_change_nothing(client, site, alice):
    ask(client)
    message = last_mail()
    scanner = Client()
    path = path_of(link_of(message))
    for _ in range(3):
        assert scanner.head(path).status_code < 500
        response = scanner.get(path)
        assert response.status_code == 200
        assert not signed_in_as(response)
    # The browser that asked may open the confirmation page any number of times.
    for _ in range(2):
        assert client.get(path).status_code == 200
    assert grants() == 1
    assert signed_in_as(confirm(client, message)) == "alice@example.com"


def test_the_confirmation_page(client, site, alice):
    ask(client, callback="/after/")
    message = last_mail()
    response = client.get(path_of(link_of(message)))
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"
    assert response["Referrer-Policy"] == "no-referrer"
    page = forms_of(response)
    (form,) = [f for f in page.forms if f.get("id") == "webauth-email-confirm-form"]
    assert form["method"] == "post"
    assert form["action"] == "http://testserver/auth/callback/email"
    assert set(form["fields"]) == {"csrfToken", "token", "email", "callbackUrl"}
    assert form["fields"]["token"] == token_of(message)
    assert form["fields"]["email"] == "alice@example.com"
    assert form["fields"]["callbackUrl"] == "http://testserver/after/"
    assert [b["id"] for b in page.buttons] == ["webauth-email-confirm"]
    assert "alice@example.com" in response.content.decode()
    assert b"<script" not in response.content


def test_the_link_in_another_browser(client, site, alice):
    ask(client)
    message = last_mail()
    other = Client()
    response = other.get(path_of(link_of(message)))
    assert response.status_code == 200
    text = response.content.decode()
    assert "only works in the browser where you asked" in text
    assert token_of(message) not in text
    assert not forms_of(response).forms  # nothing to press but a link
    assert 'href="http://testserver/auth/signin"' in text
    assert response["Referrer-Policy"] == "no-referrer"
    # A pending cookie for another address is no pending cookie for this one.
    ask(other, "bob@example.com")
    assert "only works in the browser" in other.get(path_of(link_of(message))).content.decode()


def test_a_post_without_the_pending_cookie_burns_nothing(client, site, alice):
    ask(client)
    message = last_mail()
    scanner = Client()
    fields = {
        "csrfToken": csrf_pair(scanner),
        "token": token_of(message),
        "email": "alice@example.com",
    }
    for extra in ({}, {"code": code_of(message)}):
        response = scanner.post("/auth/callback/email", {**fields, **extra})
        assert response.status_code == 400
        assert not signed_in_as(response)
    response = scanner.post(
        "/auth/callback/email", {"csrfToken": fields["csrfToken"], "code": code_of(message)}
    )
    assert response.status_code == 400 and not signed_in_as(response)
    assert grants() == 1
    assert signed_in_as(confirm(client, message)) == "alice@example.com"


def test_a_code_or_link_works_only_in_the_browser_whose_request_made_it(client, site, alice):
    # Someone who holds a pending cookie for the same address (they asked for a
    # sign-in of alice's address in their own browser, earlier) and reads the
    # code or link of alice's message (over her shoulder, from a mail scanner's
    # log) gets nothing: the grant is bound to the request that made it.
    stranger = Client()
    ask(stranger)
    ask(client)  # alice asks: her grant voids the stranger's
    message = last_mail()
    assert enter_code(stranger, code_of(message)).status_code == 400
    # The link is not one the stranger's browser asked for, though its cookie
    # names the same address: the page for another browser's link.
    link_page = stranger.get(path_of(link_of(message)))
    assert link_page.status_code == 200
    assert "only works in the browser where you asked" in link_page.content.decode()
    assert not forms_of(link_page).forms
    forced = stranger.post(
        "/auth/callback/email",
        {
            "csrfToken": csrf_pair(stranger),
            "token": token_of(message),
            "email": "alice@example.com",
        },
    )
    assert forced.status_code == 400 and not signed_in_as(forced)
    assert "only works in the browser where you asked" in forced.content.decode()
    # The stranger's wrong code counted against the grant; alice still signs in.
    assert grants() == 1
    assert signed_in_as(enter_code(client, code_of(message))) == "alice@example.com"


def test_a_post_with_neither_token_nor_code_is_the_verification_error(client, site, alice):
    ask(client)
    response = client.post("/auth/callback/email", {"csrfToken": csrf_pair(client)})
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/error?error=Verification"
    assert not signed_in_as(response) and grants() == 1


@pytest.mark.parametrize("existing", [True, False], ids=["existing user", "new user"])
def test_the_jwt_callback_is_told_whether_the_user_is_new(
    client, site, existing, django_user_model
):
    if existing:
        django_user_model.objects.create_user("alice", email="alice@example.com")
    seen = []

    def jwt(*, token, user=None, account=None, trigger=None, is_new_user=None, **kwargs):
        if trigger is not None:
            seen.append((trigger, is_new_user, account["type"] if account else None))
        return token

    site(callbacks={"jwt": jwt})
    ask(client)
    assert signed_in_as(enter_code(client, code_of(last_mail()))) == "alice@example.com"
    expected = ("signIn", False) if existing else ("signUp", True)
    assert seen == [(*expected, "email")]


def test_a_redeeming_post_needs_csrf(client, site, alice):
    ask(client)
    message = last_mail()
    response = client.post(
        "/auth/callback/email", {"token": token_of(message), "email": "alice@example.com"}
    )
    assert response["Location"] == "http://testserver/auth/signin?error=MissingCSRF"
    response = client.post("/auth/callback/email", {"code": code_of(message)})
    assert response["Location"] == "http://testserver/auth/signin?error=MissingCSRF"
    assert grants() == 1


def test_a_link_without_its_parameters(client, site, alice):
    ask(client)
    for path in ("/auth/callback/email", "/auth/callback/email?email=alice%40example.com"):
        response = client.get(path)
        assert response["Location"] == "http://testserver/auth/error?error=Verification"
    assert grants() == 1


# -- redeeming -------------------------------------------------------------------------------------


def test_the_link_signs_in_once(client, site, alice):
    ask(client, callback="/after/")
    message = last_mail()
    response = confirm(client, message)
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/after/"
    assert signed_in_as(response) == "alice@example.com"
    assert_used_marker(response, message)
    assert grants() == 0
    assert Account.objects.count() == 0  # no account row, as in Auth.js
    # Used: the same token again is refused, whoever holds it. Another browser
    # (with a pending cookie for alice, as an attacker's own browser would have)
    # is told where the link works; nothing is looked up for it.
    again = Client()
    ask(again)
    fields = {"token": token_of(message), "email": "alice@example.com", "callbackUrl": "/after/"}
    response = again.post("/auth/callback/email", {"csrfToken": csrf_pair(again), **fields})
    assert response.status_code == 400 and not signed_in_as(response)
    assert "only works in the browser where you asked" in response.content.decode()
    # The browser that used it is told the truth: the link is no longer valid.
    reopened = open_again(client, message)
    assert reopened["Location"] == VERIFICATION
    posted = client.post("/auth/callback/email", {"csrfToken": csrf_pair(client), **fields})
    assert posted["Location"] == VERIFICATION and not signed_in_as(posted)
    error_page = client.get(reopened["Location"])
    assert error_page.status_code == 403
    text = error_page.content.decode()
    assert 'data-error="Verification"' in text and "link is no longer valid." in text
    assert "only works in the browser" not in text
    # It is signed in: the page says as whom, and offers to go on.
    assert "You are signed in as <strong>alice</strong>." in text
    assert 'id="webauth-continue"' in text


@pytest.mark.parametrize(
    "typed",
    [
        lambda c: c,
        lambda c: c.replace("-", ""),
        lambda c: c.lower(),
        lambda c: f"  {c[:2]} {c[2:6]} {c[6:]} ",
        lambda c: c.replace("0", "o").replace("1", "l"),
        lambda c: c.replace("0", "O").replace("1", "I"),
        lambda c: c.replace("-", "\u2013"),
        lambda c: "".join(chr(ord(ch) + 0xFEE0) for ch in c.replace("-", "")),  # fullwidth
    ],
    ids=["as sent", "no hyphen", "lower", "spaces", "o and l", "O and I", "dash", "fullwidth"],
)
def test_the_code_signs_in_however_it_is_typed(client, site, alice, typed):
    ask(client, callback="/after/")
    response = enter_code(client, typed(code_of(last_mail())))
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/after/"
    assert signed_in_as(response) == "alice@example.com"
    assert_used_marker(response, last_mail())
    assert grants() == 0


def assert_used_marker(response, message):
    """After a sign-in the pending cookie keeps the link's fingerprint, and nothing else."""
    morsel = response.cookies[PENDING]
    assert morsel["max-age"] == str(REMEMBER_LINKS)
    payload = jose.decode(token=morsel.value, secret=SECRET, salt=PENDING)
    assert {k: v for k, v in payload.items() if k not in ("iat", "exp", "jti")} == {
        "provider": "email",
        "links": [link_fingerprint(token_of(message))],
        "used": True,
    }
    assert payload["exp"] - payload["iat"] == REMEMBER_LINKS


def test_the_verify_request_page(client, site, alice):
    bare = client.get("/auth/verify-request?provider=email&type=email")
    assert bare.status_code == 200
    assert not forms_of(bare).forms  # Auth.js's text only
    assert "Check your email" in bare.content.decode()
    ask(client)
    response = client.get("/auth/verify-request?provider=email&type=email")
    page = forms_of(response)
    (form,) = page.forms
    assert form["id"] == "webauth-email-code"
    assert form["action"] == "http://testserver/auth/callback/email"
    assert form["method"] == "post"
    assert set(form["fields"]) == {"csrfToken", "code"}
    field = next(i for i in page.inputs if i.get("name") == "code")
    assert field["autocomplete"] == "one-time-code"
    assert field["id"] == "webauth-email-code-input"
    text = response.content.decode()
    assert f'<label class="webauth-label" for="{field["id"]}"' in text
    assert "alice@example.com" in text
    assert response["Cache-Control"] == "private, no-store"


def test_digit_codes(client, site, alice):
    site(email=Email(code="digits"))
    ask(client)
    message = last_mail()
    code = re.findall(r"\b(\d{4}-\d{4})\b", message.body)[0]
    page = client.get("/auth/verify-request")
    field = next(i for i in forms_of(page).inputs if i.get("name") == "code")
    assert (field["inputmode"], field["placeholder"]) == ("numeric", "1234-5678")
    assert signed_in_as(enter_code(client, code.replace("-", " "))) == "alice@example.com"


def test_alphanumeric_codes_ask_for_text(client, site, alice):
    ask(client)
    page = client.get("/auth/verify-request")
    field = next(i for i in forms_of(page).inputs if i.get("name") == "code")
    assert (field["inputmode"], field["placeholder"]) == ("text", "ABCD-EFGH")


def test_links_only(client, site, alice):
    site(email=Email(code=None))
    ask(client)
    message = last_mail()
    assert not re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body)
    page = client.get("/auth/verify-request")
    assert not forms_of(page).forms and "alice@example.com" in page.content.decode()
    response = client.post(
        "/auth/callback/email", {"csrfToken": csrf_pair(client), "code": "ABCD-EFGH"}
    )
    assert response["Location"] == "http://testserver/auth/error?error=Verification"
    assert signed_in_as(confirm(client, message)) == "alice@example.com"


def test_wrong_codes_void_the_grant_after_five_across_a_resend(client, site, alice):
    site(rate_limits={"code_failed": "100/h/ip"})  # the grant's own count is under test
    ask(client)
    for left in (4, 3, 2):
        response = enter_code(client, "AAAA-AAAA")
        assert response.status_code == 400
        assert f"{left} attempts left" in response.content.decode()
        assert not signed_in_as(response)
    ask(client)  # a resend: the count goes on
    message = last_mail()
    for _ in range(2):
        assert enter_code(client, "AAAA-AAAA").status_code == 400
    response = enter_code(client, code_of(message))
    assert not signed_in_as(response)
    assert "can no longer be used" in response.content.decode()
    assert grants() == 0  # void
    # The link of the voided grant is dead too.
    assert confirm(client, message)["Location"].endswith("error=Verification")


def test_a_wrong_code_page(client, site, alice):
    ask(client)
    response = enter_code(client, "nope")
    assert response.status_code == 400
    page = forms_of(response)
    assert [f["id"] for f in page.forms] == ["webauth-email-code"]
    field = next(i for i in page.inputs if i.get("name") == "code")
    assert field["aria-invalid"] == "true"
    assert "webauth-email-code-error" in response.content.decode()


@pytest.mark.parametrize(
    ("wrong_before", "message"),
    [
        (
            0,
            "That code is not right, or it has expired. Check it and try again "
            "(4 attempts left), or ask for a new email.",
        ),
        (
            3,
            "That code is not right, or it has expired. Check it and try again "
            "(1 attempt left), or ask for a new email.",
        ),
        (4, "This code can no longer be used. Ask for a new email."),
    ],
)
def test_what_a_wrong_code_says(client, site, alice, wrong_before, message):
    ask(client)
    plant_pending(client, {**pending_payload(client), "attempts": wrong_before})
    response = enter_code(client, "AAAA-AAAA")
    assert message in " ".join(response.content.decode().split())


def test_a_wrong_code_is_logged_as_the_visitors_mistake(client, site, alice, caplog):
    ask(client)
    with caplog.at_level(logging.DEBUG, logger="webauth"):
        enter_code(client, "AAAA-AAAA")
    (record,) = [r for r in caplog.records if "Verification" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "A wrong or expired sign-in code was entered" in record.getMessage()


def test_a_wrong_code_with_a_custom_verify_request_page_goes_there(client, site, alice):
    site(pages={"verify_request": "/check-your-email/"})
    ask(client)
    response = enter_code_without_the_page(client, "AAAA-AAAA")
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith("http://testserver/check-your-email/?")
    assert query(location)["code"] == "invalid_code"


def enter_code_without_the_page(client, code):
    return client.post("/auth/callback/email", {"csrfToken": csrf_pair(client), "code": code})


def test_a_wrong_code_for_json_clients(client, site, alice):
    ask(client)
    response = enter_code(client, "AAAA-AAAA", headers={"X-Auth-Return-Redirect": "1"})
    assert response.status_code == 200
    url = response.json()["url"]
    assert url.startswith("http://testserver/auth/verify-request?")
    assert query(url) == {
        "provider": "email",
        "type": "email",
        "error": "Verification",
        "code": "invalid_code",
    }
    right = enter_code(client, code_of(last_mail()), headers={"X-Auth-Return-Redirect": "1"})
    assert right.json() == {"url": "http://testserver"}
    assert signed_in_as(right) == "alice@example.com"


def test_json_clients_end_to_end(client, site, alice):
    response = ask(client, json_client=True, callback="/after/")
    assert response.status_code == 200
    assert response.json() == {
        "url": "http://testserver/auth/verify-request?provider=email&type=email"
    }
    assert PENDING in response.cookies
    message = last_mail()
    response = client.post(
        "/auth/callback/email",
        json.dumps(
            {
                "csrfToken": csrf_pair(client),
                "token": token_of(message),
                "email": "alice@example.com",
            }
        ),
        content_type="application/json",
        headers={"X-Auth-Return-Redirect": "1"},
    )
    assert response.json() == {"url": "http://testserver/after/"}
    assert signed_in_as(response) == "alice@example.com"


def test_expired_grants(client, site, alice):
    # In the browser that asked, the link and the code are "no longer valid":
    # the cookie knows the grant's expiry, so nothing is looked up or consumed.
    start = datetime(2030, 1, 1, tzinfo=UTC)
    with freeze_time(start) as frozen:
        ask(client)
        link_message = last_mail()
        frozen.tick(timedelta(seconds=86400 + 5))
        response = open_again(client, link_message)
        assert response["Location"] == VERIFICATION
        posted = client.post(
            "/auth/callback/email",
            {
                "csrfToken": csrf_pair(client),
                "token": token_of(link_message),
                "email": "alice@example.com",
            },
        )
        assert posted["Location"] == VERIFICATION
        assert grants() == 1
        # Another browser is still sent back to the one that asked.
        assert "only works in the browser" in open_again(Client(), link_message).content.decode()
    with freeze_time(start) as frozen:
        ask(client)
        message = last_mail()
        frozen.tick(timedelta(seconds=86400 + 5))
        assert not forms_of(client.get("/auth/verify-request")).forms  # no code form
        response = enter_code_without_the_page(client, code_of(message))
        assert response["Location"] == VERIFICATION and not signed_in_as(response)
        # A week later the browser still knows the link.
        frozen.tick(timedelta(seconds=REMEMBER_LINKS - 60))
        assert open_again(client, message)["Location"] == VERIFICATION
    with freeze_time(start) as frozen:
        ask(client)
        message = last_mail()
        frozen.tick(timedelta(seconds=86400 - 60))
        assert signed_in_as(enter_code(client, code_of(message))) == "alice@example.com"


@pytest.mark.parametrize("cookie", ["with its expiry", "made before expiries were kept"])
@pytest.mark.parametrize("redeem", ["link", "code"])
def test_a_grant_is_expired_at_its_expiry_instant(client, site, alice, redeem, cookie):
    # As the adapters have it (use_verification_code looks for expires > now); the
    # pending cookie judges its own expiry the same way. A cookie without one
    # leaves it to the adapter (and to the flow, which checks what it hands back).
    with freeze_time(datetime(2030, 1, 1, tzinfo=UTC)) as frozen:
        ask(client)
        message = last_mail()
        if cookie != "with its expiry":
            payload = pending_payload(client)
            del payload["expires"], payload["links"]
            plant_pending(client, payload)
        frozen.tick(timedelta(seconds=86400 - 1))
        assert client.get(path_of(link_of(message))).status_code == 200  # still the button
        frozen.tick(timedelta(seconds=1))
        if redeem == "link" and cookie == "with its expiry":
            response = open_again(client, message)
        elif redeem == "link":
            response = confirm(client, message)
        else:
            response = enter_code_without_the_page(client, code_of(message))
        if redeem == "code" and cookie != "with its expiry":
            assert response.status_code == 400  # the code form: the adapter said no
        else:
            assert response["Location"] == VERIFICATION
        assert not signed_in_as(response)


def test_the_flow_judges_the_expiry_of_what_an_adapter_hands_back(client, site, alice):
    # An adapter that does not check expiry (Auth.js's adapters return an
    # expired token too): the flow refuses a grant at its expiry instant.
    class Lax(MemoryAdapter):
        async def use_verification_code(self, identifier, code, max_attempts):
            with self._grants:
                for key, grant in self._grants_of(identifier):
                    if grant.code is not None and hmac.compare_digest(grant.code, code):
                        return self.tokens.pop(key)
            return None

    site(adapter=Lax())
    with freeze_time(datetime(2030, 1, 1, tzinfo=UTC)) as frozen:
        ask(client)
        # A cookie that does not know the grant's expiry: the flow must judge.
        payload = pending_payload(client)
        del payload["expires"]
        plant_pending(client, payload)
        frozen.tick(timedelta(seconds=86400))
        response = enter_code(client, code_of(last_mail()))
    assert response.status_code == 400 and not signed_in_as(response)


def session_claims(response) -> dict:
    return jose.decode(token=response.cookies[SESSION].value, secret=SECRET, salt=SESSION)


def test_the_session_carries_the_users_name_and_image(client, site):
    adapter = MemoryAdapter()
    site(adapter=adapter)
    from asgiref.sync import async_to_sync

    from webauth.types import AdapterUser

    async_to_sync(adapter.create_user)(
        AdapterUser(id="", email="ada@example.com", name="Ada", image="https://e.example/a.png")
    )
    ask(client, "ada@example.com")
    claims = session_claims(enter_code(client, code_of(last_mail())))
    assert (claims["name"], claims["picture"]) == ("Ada", "https://e.example/a.png")


class SomeoneElseFirst(MemoryAdapter):
    """Another request gives a new user the address just before this one's creation."""

    first: bool = True

    async def create_user_and_link_account(self, user, account):
        from webauth.errors import EmailInUse
        from webauth.types import AdapterUser

        if self.first:
            await self.create_user(AdapterUser(id="", email=user.email, name="Winner"))
        raise EmailInUse("Another user has this email address")


@pytest.mark.parametrize("someone_was_first", [True, False])
def test_a_new_users_address_taken_meanwhile(client, site, someone_was_first):
    adapter = SomeoneElseFirst()
    adapter.first = someone_was_first
    site(adapter=adapter)
    ask(client, "new@example.com")
    response = enter_code(client, code_of(last_mail()))
    if someone_was_first:
        # The address has a user now: the one who proved it signs in to it.
        assert session_claims(response)["name"] == "Winner"
    else:
        # EmailInUse with nobody there: the adapter is broken; no session, and
        # the log names what it raised.
        assert SESSION not in response.cookies
        assert response["Location"] == "http://testserver/auth/error?error=Configuration"


def test_the_log_names_an_address_in_use_that_no_user_has(client, site, caplog):
    adapter = SomeoneElseFirst()
    adapter.first = False
    site(adapter=adapter)
    ask(client, "new@example.com")
    with caplog.at_level(logging.ERROR, logger="webauth"):
        enter_code(client, code_of(last_mail()))
    assert "[auth][error] EmailInUse: Another user has this email address." in caplog.text


class Terse(MemoryAdapter):
    """An adapter whose writes return nothing, as Auth.js's linkAccount may."""

    async def link_account(self, account):
        await super().link_account(account)
        return None

    async def update_user(self, user):
        await super().update_user(user)
        return None


def test_an_adapter_whose_writes_return_nothing(client, site):
    # A passkey registration made this user; the address's owner proves it by email.
    from asgiref.sync import async_to_sync

    from webauth.types import AdapterUser

    adapter = Terse()
    site(adapter=adapter)
    user = async_to_sync(adapter.create_user)(
        AdapterUser(id="", email="pat@example.com", name="Pat")
    )
    async_to_sync(adapter.mark_email_unproven)(user.id)
    linked, updated = [], []
    account_linked.connect(link := lambda **kw: linked.append(kw["account"]))
    user_updated.connect(update := lambda **kw: updated.append(kw["user"]))
    try:
        ask(client, "pat@example.com")
        response = enter_code(client, code_of(last_mail()))
        ask(client, "pat@example.com")
        again = enter_code(client, code_of(last_mail()))
    finally:
        account_linked.disconnect(link)
        user_updated.disconnect(update)
    assert session_claims(response)["name"] == "Pat" and session_claims(again)["name"] == "Pat"
    # The proven address became an email account: the event has the account passed.
    (account,) = linked
    assert (account.provider, account.provider_account_id) == ("email", "pat@example.com")
    # One update for the proof and its date; the second sign-in changes nothing.
    assert [u.id for u in updated] == [user.id]


def test_two_users_with_one_address_refuse_the_sign_in(client, site, caplog):
    # auth.User's address is not unique; rows written outside webauth may share
    # one. webauth picks neither: the sign-in is refused and the log says who.
    first = get_user_model().objects.create_user("dup1", email="dup@example.com")
    second = get_user_model().objects.create_user("dup2", email="dup@example.com")
    with caplog.at_level(logging.ERROR, logger="webauth"):
        response = ask(client, "dup@example.com")
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert not mail.outbox and grants() == 0
    assert f"Users {first.pk} and {second.pk} have the same email address" in caplog.text
    assert "dup@example.com" not in caplog.text


def test_a_new_request_voids_the_earlier_link_and_code(client, site, alice):
    ask(client)
    first = last_mail()
    ask(client)
    second = last_mail()
    assert token_of(first) != token_of(second)
    assert grants() == 1
    # The browser asked for the first link too: it is no longer valid, not elsewhere.
    assert open_again(client, first)["Location"] == VERIFICATION
    assert pending_payload(client)["links"] == [
        link_fingerprint(token_of(second)),
        link_fingerprint(token_of(first)),
    ]
    assert enter_code(client, code_of(first)).status_code == 400
    assert signed_in_as(enter_code(client, code_of(second))) == "alice@example.com"


def test_one_click_links_when_confirm_link_is_off(client, site, alice):
    site(email=Email(confirm_link=False))
    ask(client, callback="/after/")
    message = last_mail()
    anywhere = Client()
    response = anywhere.get(path_of(link_of(message)))
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/after/"
    assert signed_in_as(response) == "alice@example.com"
    assert anywhere.get(path_of(link_of(message)))["Location"].endswith("error=Verification")


@pytest.mark.parametrize("asker", [True, False], ids=["the browser that asked", "another"])
def test_one_click_links_may_be_posted_too(client, site, alice, asker):
    # Auth.js's link redeemed by a POST (a client that posts the link's fields):
    # any browser, and the landing is the one the asking browser chose.
    site(email=Email(confirm_link=False))
    ask(client, callback="/after/")
    message = last_mail()
    browser = client if asker else Client()
    response = browser.post(
        "/auth/callback/email",
        {
            "csrfToken": csrf_pair(browser),
            "token": token_of(message),
            "email": "alice@example.com",
            "callbackUrl": "/elsewhere/",
        },
    )
    assert signed_in_as(response) == "alice@example.com"
    landing = "/after/" if asker else "/elsewhere/"
    assert response["Location"] == f"http://testserver{landing}"


@pytest.mark.parametrize("one_click", [False, True], ids=["confirm", "one-click"])
@pytest.mark.parametrize(
    "fields",
    [
        {"email": "alice@example.com"},
        {"email": "alice@example.com", "token": ""},
        {"email": ["alice@example.com"], "token": "t"},
        {"email": "alice@example.com", "token": ["t"]},
        {"token": "t"},
    ],
    ids=repr,
)
def test_a_link_without_a_token_or_address_is_the_verification_error(
    client, site, alice, fields, one_click
):
    site(email=Email(confirm_link=not one_click))
    ask(client)
    body = json.dumps({"csrfToken": csrf_pair(client), **fields})
    posted = client.post("/auth/callback/email", body, content_type="application/json")
    assert posted.status_code == 302
    assert posted["Location"] == "http://testserver/auth/error?error=Verification"
    plain = {k: v for k, v in fields.items() if isinstance(v, str)}
    opened = client.get("/auth/callback/email", plain)
    assert opened["Location"] == "http://testserver/auth/error?error=Verification"
    assert grants() == 1


def test_what_the_pages_templates_are_given(client, site, alice):
    # The context is a project's to use when it overrides the templates.
    ask(client, callback="/after/")
    message = last_mail()
    confirm_page = client.get(path_of(link_of(message)))
    assert confirm_page.context["provider"] == {"id": "email", "name": "Email"}
    assert confirm_page.context["identifier"] == "alice@example.com"
    assert confirm_page.context["callback_url"] == "http://testserver/after/"
    assert 'data-provider="email"' in confirm_page.content.decode()
    elsewhere = Client().get(path_of(link_of(message)))
    assert elsewhere.context["provider"] == {"id": "email", "name": "Email"}
    assert elsewhere.context["has_code"] is True
    assert elsewhere.context["signin_url"] == "http://testserver/auth/signin"
    assert "enter the code from the email there" in elsewhere.content.decode()
    page = client.get("/auth/verify-request")
    assert page.context["provider"] == {"id": "email", "name": "Email"}
    assert page.context["signin_url"] == "http://testserver/auth/signin"
    wrong = enter_code(client, "AAAA-AAAA")
    assert (wrong.context["url"], wrong.context["host"]) == ("http://testserver", "testserver")
    assert wrong.context["provider"] == {"id": "email", "name": "Email"}


def test_the_pages_link_to_a_custom_sign_in_page_as_configured(client, site, alice):
    site(pages={"sign_in": "/login/"})
    ask(client)
    elsewhere = Client().get(path_of(link_of(last_mail())))
    assert elsewhere.context["signin_url"] == "/login/"
    assert 'href="/login/"' in elsewhere.content.decode()
    assert client.get("/auth/verify-request").context["signin_url"] == "/login/"


def test_the_other_browsers_page_for_links_only(client, site, alice):
    site(email=Email(code=None))
    ask(client)
    elsewhere = Client().get(path_of(link_of(last_mail())))
    assert elsewhere.context["has_code"] is False
    text = elsewhere.content.decode()
    assert "Open the link in the browser where you asked to sign in." in text
    assert "enter the code" not in text


def test_the_sign_in_callback_and_the_signals_of_a_redemption(client, site, alice):
    seen = {}

    def sign_in(*, user, account, email=None, **kwargs):
        if not email:  # the redemption, not the ask
            seen["callback"] = (user.email, account["type"], account["providerAccountId"])
        return True

    def created(sender, user, request, **kwargs):
        seen["created"] = (sender, user.email, request.path)

    site(callbacks={"sign_in": sign_in})
    user_created.connect(created)
    try:
        ask(client)
        enter_code(client, code_of(last_mail()))
        ask(client, "new@example.com")
        enter_code(client, code_of(last_mail()))
    finally:
        user_created.disconnect(created)
    assert seen["callback"] == ("new@example.com", "email", "new@example.com")
    assert seen["created"] == ("email", "new@example.com", "/auth/callback/email")


def test_one_click_links_check_the_address(client, site, alice):
    site(email=Email(confirm_link=False))
    ask(client)
    link = link_of(last_mail()).replace("alice%40example.com", "bob%40example.com")
    assert Client().get(path_of(link))["Location"].endswith("error=Verification")


# -- what a redemption stores ---------------------------------------------------------------------


@pytest.fixture
def memory(site):
    adapter = MemoryAdapter()
    site(adapter=adapter)
    return adapter


def test_an_existing_user_gets_email_verified(client, memory):
    from asgiref.sync import async_to_sync

    from webauth.types import AdapterUser

    user = async_to_sync(memory.create_user)(AdapterUser(id="", email="alice@example.com"))
    updated = []

    def receiver(sender, user, **kwargs):
        updated.append((sender, user.email_verified))

    user_updated.connect(receiver)
    try:
        before = datetime.now(UTC)
        ask(client)
        response = enter_code(client, code_of(last_mail()))
        assert signed_in_as(response) == "alice@example.com"
    finally:
        user_updated.disconnect(receiver)
    stored = memory.users[user.id]
    assert stored.email_verified is not None and stored.email_verified >= before
    assert updated == [("email", stored.email_verified)]
    # The first sign-in's time stays: later sign-ins change nothing.
    first = stored.email_verified
    ask(client)
    enter_code(client, code_of(last_mail()))
    assert memory.users[user.id].email_verified == first
    assert len(memory.users) == 1


def test_a_user_model_without_email_verified_gets_no_update_user(client, site, alice):
    """Django's own User keeps no ``email_verified``: signing in changes nothing on it."""
    updated = []
    user_updated.connect(receiver := lambda **kw: updated.append(kw))
    try:
        for _ in range(2):
            ask(client)
            response = enter_code(client, code_of(last_mail()))
            assert signed_in_as(response) == "alice@example.com"
    finally:
        user_updated.disconnect(receiver)
    assert updated == []


def test_a_new_user_is_created(client, memory, site):
    site(adapter=memory, pages={"new_user": "/welcome/"})
    created, linked = [], []

    def on_created(sender, user, **kwargs):
        created.append((sender, user.email))

    def on_linked(sender, user, account, **kwargs):
        linked.append((sender, user.id, account.type, account.provider_account_id))

    user_created.connect(on_created)
    account_linked.connect(on_linked)
    try:
        ask(client, "Newcomer@Example.com", callback="/after/")
        response = enter_code(client, code_of(last_mail()))
    finally:
        user_created.disconnect(on_created)
        account_linked.disconnect(on_linked)
    assert response["Location"] == "/welcome/?callbackUrl=http%3A%2F%2Ftestserver%2Fafter%2F"
    assert signed_in_as(response) == "newcomer@example.com"
    (user,) = memory.users.values()
    assert user.email == "newcomer@example.com" and user.email_verified is not None
    assert created == [("email", "newcomer@example.com")]
    # Unlike Auth.js, the address is stored as the new user's email account.
    assert linked == [("email", user.id, "email", "newcomer@example.com")]
    (account,) = memory.accounts.values()
    assert (account.provider, account.user_id) == ("email", user.id)


def test_a_new_django_user(client, site):
    ask(client, "carol@example.com")
    response = confirm(client, last_mail())
    assert signed_in_as(response) == "carol@example.com"
    user = get_user_model().objects.get()
    assert user.email == "carol@example.com" and not user.has_usable_password()
    account = Account.objects.get()
    assert (account.user_id, account.provider, account.type) == (user.pk, "email", "email")
    assert account.provider_account_id == "carol@example.com"
    assert response.cookies[SESSION]["max-age"] != "0"


def test_an_inactive_user_is_refused(client, site, alice):
    alice.is_active = False
    alice.save()
    ask(client)  # the same answer as for anyone
    assert len(mail.outbox) == 1
    response = enter_code(client, code_of(last_mail()))
    assert response["Location"] == "http://testserver/auth/error?error=AccessDenied"
    assert not signed_in_as(response)


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_both_session_strategies(client, site, alice, strategy):
    site(session={"strategy": strategy})
    ask(client)
    response = confirm(client, last_mail())
    assert response.status_code == 302 and response.cookies[SESSION].value
    session = client.get("/auth/session").json()
    assert session["user"]["email"] == "alice@example.com"
    assert client.get("/whoami/").json()["username"] == "alice"


def test_the_sign_in_callback_at_redemption(client, site, alice):
    calls = []

    def sign_in(**kwargs):
        calls.append(kwargs)
        return "/only-here/" if "email" not in kwargs else True

    site(callbacks={"sign_in": sign_in})
    ask(client)
    response = enter_code(client, code_of(last_mail()))
    assert response["Location"] == "http://testserver/only-here/"
    assert not signed_in_as(response)
    assert [c.get("email") for c in calls] == [{"verification_request": True}, None]
    assert calls[1]["account"]["type"] == "email"


# -- delivery ------------------------------------------------------------------------------------


def test_a_delivery_failure(client, site, alice):
    sent = {}

    def broken(**kwargs):
        sent.update(kwargs)
        raise ConnectionRefusedError("smtp down")

    site(email=Email(send_verification_request=broken))
    response = ask(client)
    assert response["Location"] == "http://testserver/auth/signin?error=EmailSignin"
    assert grants() == 0  # nothing usable is left behind
    assert PENDING not in response.cookies
    page = client.get(response["Location"])
    assert "could not be sent" in page.content.decode()


def test_a_delivery_function_gets_everything(client, site, alice):
    sent = []
    site(email=Email(send_verification_request=lambda **kw: sent.append(kw), max_age=900))
    ask(client)
    (kwargs,) = sent
    assert set(kwargs) == {
        "identifier",
        "url",
        "token",
        "code",
        "expires",
        "provider",
        "theme",
        "request",
    }
    assert kwargs["identifier"] == "alice@example.com"
    assert kwargs["token"] in kwargs["url"]
    assert re.fullmatch(r"[0-9A-Z]{4}-[0-9A-Z]{4}", kwargs["code"])
    assert timedelta(seconds=890) < kwargs["expires"] - datetime.now(UTC) <= timedelta(seconds=900)
    assert kwargs["provider"].id == "email" and kwargs["request"].path == "/auth/signin/email"
    assert not mail.outbox
    assert enter_code(client, kwargs["code"]).status_code == 302


def test_an_async_delivery_function(client, site, alice):
    sent = []

    async def deliver(**kwargs):
        sent.append(kwargs["identifier"])

    site(email=Email(send_verification_request=deliver))
    assert ask(client).status_code == 302
    assert sent == ["alice@example.com"]


def test_templates_subject_and_theme(client, site, alice, settings):
    site(
        email=Email(subject="Your link for {host} {not a field}"),
        theme={"brand_color": "#ff0066", "logo": "https://cdn.example/logo.png"},
    )
    settings.DEFAULT_FROM_EMAIL = "site@example.com"
    ask(client)
    message = last_mail()
    assert message.subject == "Your link for testserver {not a field}"
    assert message.from_email == "site@example.com"
    html = message.alternatives[0][0]
    assert "#ff0066" in html and "https://cdn.example/logo.png" in html


# -- rate limits ---------------------------------------------------------------------------------


def test_email_send_per_address(client, site, alice):
    for _ in range(5):
        assert ask(client).status_code == 302
    response = ask(client)
    assert response["Location"] == "http://testserver/auth/signin?error=RateLimited"
    assert int(response["Retry-After"]) > 0
    assert len(mail.outbox) == 5
    # Another address from the same place is still served; JSON clients get 429.
    assert ask(client, "bob@example.com").status_code == 302
    response = ask(client, json_client=True)
    assert response.status_code == 429 and response.json()["error"] == "RateLimited"


def test_email_send_per_client(client, site):
    site(rate_limits={"email_send": "3/h/ip"})
    for n in range(3):
        assert ask(client, f"user{n}@example.com").status_code == 302
    response = ask(client, "user9@example.com")
    assert response["Location"].endswith("error=RateLimited")
    assert ask(Client(REMOTE_ADDR="10.0.0.9"), "user9@example.com").status_code == 302


def test_code_failed_limits_guesses(client, site, alice):
    site(email=Email(code_max_attempts=50), rate_limits={"code_failed": "3/5m/key"})
    ask(client)
    message = last_mail()
    for _ in range(3):
        assert enter_code(client, "AAAA-AAAA").status_code == 400
    response = enter_code(client, code_of(message))
    assert response["Location"] == "http://testserver/auth/signin?error=RateLimited"
    assert not signed_in_as(response)


def test_a_right_code_gives_its_attempt_back(client, site, alice):
    site(rate_limits={"code_failed": "2/5m/key"})
    for _ in range(4):
        ask(client)
        assert signed_in_as(enter_code(client, code_of(last_mail()))) == "alice@example.com"


# -- the helper ----------------------------------------------------------------------------------


def _request(client=None):
    request = RequestFactory().post("/somewhere/")
    request.COOKIES = dict(client.cookies.items()) if client else {}
    return request


def test_the_helper_sends_the_email(site, alice):
    response = helper_sign_in(_request(), "email", "/after/", email="Alice@example.com")
    assert response.status_code == 302
    assert response["Location"].endswith("/auth/verify-request?provider=email&type=email")
    assert PENDING in response.cookies
    assert query(link_of(last_mail()))["callbackUrl"] == "http://testserver/after/"
    response = helper_sign_in(_request(), "email", options={"email": "bob@example.com"})
    assert last_mail().to == ["bob@example.com"]


@pytest.mark.parametrize("address", ["nope", "", None, "a,b@example.com"])
def test_the_helper_reports_a_bad_address(site, address):
    result = helper_sign_in(_request(), "email", email=address)
    assert result.failed is True
    assert list(result.field_errors) == ["email"] and result.field_errors["email"]
    assert not mail.outbox


def test_the_helper_through_a_view(client, site, alice):
    response = client.post(
        "/helper-signin/",
        json.dumps({"provider_id": "email", "email": "nope"}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert list(response.json()["field_errors"]) == ["email"]
    response = client.post(
        "/helper-signin/",
        json.dumps({"provider_id": "email", "email": "alice@example.com"}),
        content_type="application/json",
    )
    assert response.status_code == 302
    assert signed_in_as(enter_code(client, code_of(last_mail()))) == "alice@example.com"


def test_the_helper_reports_a_delivery_failure(site):
    def broken(**kwargs):
        raise OSError("down")

    site(email=Email(send_verification_request=broken))
    result = helper_sign_in(_request(), "email", email="alice@example.com")
    assert result.failed and result.form_errors == ["The e-mail could not be sent."]


# -- configuration -------------------------------------------------------------------------------


class NoCodes:
    """An Auth.js-style adapter: users and tokens, none of webauth's grant methods."""

    def create_user(self, user):
        return user

    def get_user(self, id):
        return None

    def get_user_by_email(self, email):
        return None

    def update_user(self, user):
        return user

    def create_verification_token(self, token):
        return token

    def use_verification_token(self, identifier, token):
        return None


def test_e008_names_the_missing_methods(settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": NoCodes(),
        "session": {"strategy": "jwt"},
        "providers": [Email(from_email="a@example.com")],
    }
    errors = [m for m in check_config() if m.id == "webauth.E008"]
    assert len(errors) == 1
    assert "replace_verification_token" in errors[0].msg
    assert "use_verification_code" in errors[0].msg


def test_e008_without_any_adapter(settings):
    settings.WEBAUTH = {"secret": SECRET, "providers": [Email(from_email="a@example.com")]}
    errors = [m for m in check_config() if m.id == "webauth.E008"]
    assert len(errors) == 1 and isinstance(errors[0], Error)
    assert "needs an adapter" in errors[0].msg


@pytest.mark.parametrize("adapter", [None, NoCodes()], ids=["none", "incomplete"])
def test_missing_adapter_at_request_time(client, settings, adapter):
    settings.WEBAUTH = {
        "secret": SECRET,
        "session": {"strategy": "jwt"},
        "providers": [Email()],
        **({"adapter": adapter} if adapter else {}),
    }
    response = ask(client)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert not mail.outbox
    response = client.get("/auth/callback/email?token=x&email=alice%40example.com")
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"


def test_missing_adapter_is_logged_as_such(client, settings, caplog):
    settings.WEBAUTH = {"secret": SECRET, "providers": [Email()]}
    with caplog.at_level(logging.ERROR, logger="webauth"):
        ask(client)
    assert "MissingAdapter: Email login requires an adapter." in caplog.text


@pytest.mark.parametrize(
    ("settings_", "provider", "expected"),
    [
        ({"DEBUG": False}, Email(), {"webauth.W008"}),
        ({"DEBUG": True}, Email(), set()),
        ({"DEBUG": False, "DEFAULT_FROM_EMAIL": "site@example.com"}, Email(), set()),
        ({"DEBUG": False}, Email(from_email="a@example.com"), set()),
        (
            {
                "DEBUG": False,
                "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend",
            },
            Email(from_email="a@example.com"),
            {"webauth.W009"},
        ),
        (
            {"DEBUG": True, "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"},
            Email(from_email="a@example.com"),
            set(),
        ),
        (
            {"DEBUG": False, "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"},
            Email(from_email="a@example.com", send_verification_request=lambda **kw: None),
            set(),
        ),
        (
            {"DEBUG": False, "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend"},
            Email(from_email="a@example.com", confirm_link=False),
            {"webauth.I002"},
        ),
    ],
)
def test_provider_checks(settings, settings_, provider, expected):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    for key, value in settings_.items():
        setattr(settings, key, value)
    settings.WEBAUTH = {"secret": SECRET, "adapter": ADAPTER, "providers": [provider]}
    found = {m.id for m in check_config()} & {"webauth.W008", "webauth.W009", "webauth.I002"}
    assert found == expected


@pytest.mark.parametrize(
    "options",
    [
        {"max_age": 0},
        {"max_age": -5},
        {"max_age": "900"},
        {"max_age": True},
        {"code": "emoji"},
        {"code_max_attempts": 0},
        {"confirm_link": "yes"},
        {"send_verification_request": "no.such.module.send"},
        {"normalize_identifier": 42},
    ],
    ids=lambda o: repr(o)[:40],
)
def test_bad_provider_options(settings, options):
    settings.WEBAUTH = {"secret": SECRET, "adapter": ADAPTER, "providers": [Email(**options)]}
    (error,) = [m for m in check_config() if m.id.startswith("webauth.E")]
    assert error.id == "webauth.E004"
    assert next(iter(options)) in error.msg


def test_the_provider_in_the_providers_list(client, site):
    assert client.get("/auth/providers").json()["email"] == {
        "id": "email",
        "name": "Email",
        "type": "email",
        "signinUrl": "http://testserver/auth/signin/email",
        "callbackUrl": "http://testserver/auth/callback/email",
    }


def test_beside_other_providers(client, settings, alice):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "session": {"strategy": "jwt"},
        "providers": [DjangoCredentials(), Email(id="magic", name="Magic link")],
    }
    assert client.get("/auth/signin").status_code == 200
    data = {"csrfToken": csrf_pair(client), "email": "alice@example.com"}
    response = client.post("/auth/signin/magic", data)
    assert response["Location"].endswith("/auth/verify-request?provider=magic&type=email")
    assert "/auth/callback/magic?" in last_mail().body
    page = client.get("/auth/verify-request")
    assert forms_of(page).forms[0]["action"] == "http://testserver/auth/callback/magic"
    assert signed_in_as(enter_code(client, code_of(last_mail()))) == "alice@example.com"


def test_a_pending_cookie_of_another_provider_does_not_count(client, settings, alice):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "session": {"strategy": "jwt"},
        "providers": [Email(id="one"), Email(id="two")],
    }
    data = {"csrfToken": csrf_pair(client), "email": "alice@example.com"}
    client.post("/auth/signin/one", data)
    message = last_mail()
    response = client.post(
        "/auth/callback/two", {"csrfToken": data["csrfToken"], "code": code_of(message)}
    )
    assert response.status_code == 400 and not signed_in_as(response)
    link = link_of(message).replace("/callback/one", "/callback/two")
    assert "only works in the browser" in client.get(path_of(link)).content.decode()


def test_a_tampered_pending_cookie_is_none(client, site, alice):
    ask(client)
    message = last_mail()
    forged = jose.encode(
        token={"provider": "email", "identifier": "alice@example.com", "callbackUrl": "/"},
        secret="another-secret-" + "x" * 30,
        salt=PENDING,
    )
    client.cookies[PENDING] = forged
    response = client.post(
        "/auth/callback/email", {"csrfToken": csrf_pair(client), "code": code_of(message)}
    )
    assert response.status_code == 400 and not signed_in_as(response)
    assert grants() == 1


# -- the pending cookie's own checks ---------------------------------------------------------------


def pending_payload(client) -> dict:
    return jose.decode(token=client.cookies[PENDING].value, secret=SECRET, salt=PENDING)


def plant_pending(client, payload) -> None:
    client.cookies[PENDING] = jose.encode(token=payload, secret=SECRET, salt=PENDING)


def test_the_pending_cookie_holds_the_grants_binding(client, site, alice):
    from webauth.flows.email import BINDING_LENGTH

    ask(client)
    payload = pending_payload(client)
    assert BINDING_LENGTH == 43  # secrets.token_urlsafe(32): 256 bits
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", payload["binding"])
    assert set(payload) >= {"provider", "identifier", "callbackUrl", "binding", "attempts"}
    assert payload["attempts"] == 0


@pytest.mark.parametrize(
    "change",
    [
        {"provider": 7},
        {"identifier": 7},
        {"identifier": ""},
        {"binding": 7},
        {"binding": ""},
    ],
    ids=repr,
)
def test_a_pending_cookie_with_a_field_of_the_wrong_kind_is_none(client, site, alice, change):
    ask(client)
    message = last_mail()
    plant_pending(client, {**pending_payload(client), **change})
    response = client.post(
        "/auth/callback/email", {"csrfToken": csrf_pair(client), "code": code_of(message)}
    )
    assert response.status_code == 400 and not signed_in_as(response)
    assert "only works in the browser" in response.content.decode()
    assert grants() == 1  # nothing was tried against the grant


@pytest.mark.parametrize(
    ("stored", "after_one_wrong"),
    [
        (None, "4 attempts left"),  # absent: none yet
        ("many", "4 attempts left"),
        (True, "4 attempts left"),  # a bool is no count
        (-3, "4 attempts left"),
        (3, "1 attempt left"),
        (10**30, "can no longer be used"),
    ],
    ids=repr,
)
def test_the_attempts_the_pending_cookie_counts(client, site, alice, stored, after_one_wrong):
    ask(client)
    payload = pending_payload(client)
    del payload["attempts"]
    if stored is not None:
        payload["attempts"] = stored
    plant_pending(client, payload)
    response = enter_code(client, "AAAA-AAAA")
    assert after_one_wrong in response.content.decode()
    counted = pending_payload(client)["attempts"]
    assert isinstance(counted, int) and not isinstance(counted, bool) and 1 <= counted <= 1001


def test_a_pending_cookie_of_a_provider_that_sends_no_email_shows_no_code_form(
    client, settings, alice
):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "providers": [Email(from_email="Example <no-reply@example.com>"), DjangoCredentials()],
    }
    ask(client)
    plant_pending(client, {**pending_payload(client), "provider": "credentials"})
    page = client.get("/auth/verify-request")
    assert page.status_code == 200
    assert not forms_of(page).forms
    assert "alice@example.com" not in page.content.decode()


def test_a_pending_cookie_without_a_callback_url_lands_on_the_site(client, site, alice):
    ask(client, callback="/after/")
    payload = {**pending_payload(client), "callbackUrl": ["/after/"]}
    plant_pending(client, payload)
    response = enter_code(client, code_of(last_mail()))
    assert signed_in_as(response) == "alice@example.com"
    assert response["Location"] == "http://testserver"


def test_a_form_with_both_a_token_and_a_code_is_the_link(client, site, alice):
    # The confirmation page posts the token; a code beside it changes nothing.
    ask(client)
    message = last_mail()
    response = client.post(
        "/auth/callback/email",
        {
            "csrfToken": csrf_pair(client),
            "token": token_of(message),
            "email": "alice@example.com",
            "code": "AAAA-AAAA",
        },
    )
    assert signed_in_as(response) == "alice@example.com"


def test_the_grant_as_stored(client, site, alice):
    from webauth.flows.email import grant_hash
    from webauth.models import token_hash

    with freeze_time("2031-03-04 10:00:00.654321"):
        ask(client)
    message = last_mail()
    binding = pending_payload(client)["binding"]
    (row,) = VerificationToken.objects.all()
    provider = Email()
    # Bound to the request: the hashes of the value and the binding together.
    bound_token = grant_hash(provider, token_of(message), binding, [SECRET])
    bound_code = grant_hash(provider, code_of(message).replace("-", ""), binding, [SECRET])
    assert row.token_hash == token_hash(bound_token)
    assert row.code_hash == token_hash(bound_code)
    assert bound_token != provider.hash_value(token_of(message), [SECRET])
    # The expiry in whole seconds, as Auth.js's Date has it.
    assert row.expires == datetime(2031, 3, 5, 10, 0, 0, tzinfo=UTC)


def test_a_one_click_link_is_stored_as_auth_js_stores_it(client, site, alice):
    from webauth.models import token_hash

    site(email=Email(confirm_link=False, code=None))
    ask(client)
    (row,) = VerificationToken.objects.all()
    # Auth.js's sha256(token + secret): the link works in any browser, as Auth.js's.
    expected = hashlib.sha256((token_of(last_mail()) + SECRET).encode()).hexdigest()
    assert row.token_hash == token_hash(expected)
    assert row.code_hash == ""  # links only: no code


def test_an_adapter_that_returns_no_grant_starts_the_count_at_zero(client, site, alice):
    class Quiet(MemoryAdapter):
        async def replace_verification_token(self, token):
            await super().replace_verification_token(token)
            return None

    site(adapter=Quiet())
    ask(client)
    assert pending_payload(client)["attempts"] == 0


def test_the_pages_are_themed_html(client, site, alice):
    site(theme={"brand_color": "#123456"})
    ask(client)
    page = client.get(path_of(link_of(last_mail())))
    assert page["Content-Type"] == "text/html; charset=utf-8"
    assert "#123456" in page.content.decode()


def test_an_invalid_address_is_a_warning_that_names_no_address(client, site, caplog):
    with caplog.at_level(logging.DEBUG, logger="webauth"):
        response = ask(client, "not an address")
    assert response.status_code == 400
    (record,) = [r for r in caplog.records if "EmailSignInError" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "[EmailSignInError] The email address is not valid." in record.getMessage()
    assert "not an address" not in caplog.text


def test_a_sent_email_is_logged_at_debug(client, site, alice, caplog):
    site(debug=True)  # webauth's debug lines, as Auth.js's debug option
    with caplog.at_level(logging.DEBUG, logger="webauth"):
        ask(client)
    (line,) = [
        r.getMessage() for r in caplog.records if "verification email sent" in r.getMessage()
    ]
    assert "email" in line  # the provider; test_no_secret_reaches_the_logs checks for secrets


# -- logs ----------------------------------------------------------------------------------------


def test_no_secret_reaches_the_logs(client, site, alice, caplog):
    caplog.set_level(logging.DEBUG)
    site(debug=True)
    secrets_seen = []
    for redeem in ("link", "code", "wrong"):
        ask(client)
        message = last_mail()
        token, code = token_of(message), code_of(message)
        secrets_seen += [token, code, code.replace("-", ""), link_of(message)]
        secrets_seen += [
            hashlib.sha256((v + SECRET).encode()).hexdigest()
            for v in (token, code.replace("-", ""))
        ]
        binding = pending_payload(client)["binding"]
        secrets_seen += [
            binding,
            *(grant_hash(Email(), v, binding, [SECRET]) for v in (token, code.replace("-", ""))),
        ]
        if redeem == "link":
            confirm(client, message)
        elif redeem == "code":
            enter_code(client, code.lower())
        else:
            enter_code(client, "AAAA-AAAA")
            Client().get(path_of(link_of(message)))
    assert caplog.records  # the flow did log (debug lines, the wrong code)
    for record in caplog.records:
        text = record.getMessage() + str(record.args or "")
        for secret in secrets_seen:
            assert secret not in text, (record.levelname, record.name)
        assert "alice@example.com" not in text or record.levelno < logging.INFO


def test_no_secret_reaches_the_logs_on_failures(client, site, alice, caplog):
    caplog.set_level(logging.DEBUG)

    def broken(**kwargs):
        raise OSError("smtp down")

    site(email=Email(send_verification_request=broken))
    ask(client)
    assert "EmailSignInError" in caplog.text
    assert not re.search(r"[0-9a-f]{64}", caplog.text)
    assert "token=" not in caplog.text


# -- the pending cookie on https ---------------------------------------------------------------


def test_the_pending_cookie_is_secure_on_https(client, site, alice):
    token = csrf_pair(client, secure=True)
    response = client.post(
        "/auth/signin/email", {"csrfToken": token, "email": "alice@example.com"}, secure=True
    )
    morsel = response.cookies["__Secure-" + PENDING]
    assert morsel["secure"] and morsel["httponly"]
    link = link_of(last_mail())
    assert link.startswith("https://testserver/auth/callback/email?")
    page = client.get(path_of(link), secure=True)
    assert any(f.get("id") == "webauth-email-confirm-form" for f in forms_of(page).forms)
    form = next(f for f in forms_of(page).forms if f.get("id") == "webauth-email-confirm-form")
    response = client.post(
        "/auth/callback/email", {**form["fields"], "csrfToken": token}, secure=True
    )
    assert response.cookies["__Secure-" + SESSION].value


# -- a link opened again: the link, not the browser, is the problem (issue 23) ---------------------


def test_the_link_opened_after_signing_in_with_the_code(client, site, alice):
    # The person types the code, then finds the email again and clicks its link.
    ask(client, callback="/after/")
    message = last_mail()
    assert signed_in_as(enter_code(client, code_of(message))) == "alice@example.com"
    response = open_again(client, message)
    assert response["Location"] == VERIFICATION
    assert "You are signed in as" in client.get(VERIFICATION).content.decode()
    # However often: the same answer, and nothing written.
    again = open_again(client, message)
    assert again["Location"] == VERIFICATION and PENDING not in again.cookies
    # The code typed again (an old tab) is no longer valid either.
    posted = enter_code_without_the_page(client, code_of(message))
    assert posted["Location"] == VERIFICATION
    assert not forms_of(client.get("/auth/verify-request")).forms  # nothing left to type


def test_a_used_link_in_a_browser_that_signed_out_since(client, site, alice):
    ask(client)
    message = last_mail()
    confirm(client, message)
    client.cookies.pop(SESSION)
    assert open_again(client, message)["Location"] == VERIFICATION
    page = client.get(VERIFICATION)
    assert "You are signed in" not in page.content.decode()
    assert 'href="http://testserver/auth/signin"' in page.content.decode()


def test_what_a_browser_without_the_cookie_sees_does_not_change_when_the_link_is_used(
    client, site, alice
):
    # No existence or state oracle: a scanner (or anyone) without the cookie gets
    # the same page before and after the sign-in, and nothing is consumed.
    ask(client)
    message = last_mail()
    scanner = Client()
    before = open_again(scanner, message)
    assert grants() == 1
    confirm(client, message)
    after = open_again(scanner, message)
    assert before.status_code == after.status_code == 200
    assert before.content == after.content
    assert "only works in the browser where you asked" in after.content.decode()
    # Nor does a cookieless POST of the used token learn anything.
    posted = scanner.post(
        "/auth/callback/email",
        {"csrfToken": csrf_pair(scanner), "token": token_of(message), "email": "alice@example.com"},
    )
    assert posted.status_code == 400
    assert "only works in the browser where you asked" in posted.content.decode()


def test_nothing_is_looked_up_to_answer_a_link_the_browser_knows(client, site, alice, monkeypatch):
    from webauth.adapters.django import DjangoAdapter

    ask(client)
    message = last_mail()
    confirm(client, message)
    calls = []
    for name in ("use_verification_token", "use_verification_code", "get_user_by_email"):
        original = getattr(DjangoAdapter, name)

        def spy(self, *args, _name=name, _original=original, **kwargs):
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(DjangoAdapter, name, spy)
    fields = {"token": token_of(message), "email": "alice@example.com"}
    assert open_again(client, message)["Location"] == VERIFICATION
    posted = client.post("/auth/callback/email", {"csrfToken": csrf_pair(client), **fields})
    assert posted["Location"] == VERIFICATION
    assert enter_code_without_the_page(client, code_of(message))["Location"] == VERIFICATION
    assert open_again(Client(), message).status_code == 200
    assert calls == []


def test_a_link_for_another_address_than_the_one_asked_for_last(client, site, alice):
    # The browser asked for alice, then (a typo fixed, say) for bob: alice's
    # grant's binding is gone with the cookie that held it, so her link can be
    # used nowhere. It was asked for here: "no longer valid", not "elsewhere".
    ask(client)
    first = last_mail()
    ask(client, "bob@example.com")
    assert grants() == 2
    assert open_again(client, first)["Location"] == VERIFICATION
    # A link for an address this browser never asked for is another browser's.
    someone = Client()
    ask(someone, "carol@example.com")
    carols = last_mail()
    page = open_again(client, carols)
    assert page.status_code == 200 and "only works in the browser" in page.content.decode()
    # And bob's link, the one it asked for last, still has its button.
    bobs = mail.outbox[-2]
    assert bobs.to == ["bob@example.com"]
    assert signed_in_as(confirm(client, bobs)) == "bob@example.com"


def test_the_browser_remembers_its_last_links(client, site, alice):
    from webauth.flows.email import LINKS_KEPT

    assert LINKS_KEPT == 5
    site(rate_limits={"email_send": "10/m/ip"})
    for _ in range(LINKS_KEPT + 1):
        ask(client)
    messages = mail.outbox[-(LINKS_KEPT + 1) :]
    assert len(pending_payload(client)["links"]) == LINKS_KEPT
    # The oldest is forgotten: its page is the one for a link of another browser.
    assert "only works in the browser" in open_again(client, messages[0]).content.decode()
    for message in messages[1:-1]:
        assert open_again(client, message)["Location"] == VERIFICATION
    assert signed_in_as(confirm(client, messages[-1])) == "alice@example.com"
    assert len(pending_payload(client)["links"]) == LINKS_KEPT
    for message in messages[1:]:
        assert open_again(client, message)["Location"] == VERIFICATION
    # The cookie stays small: five links add a little over a hundred characters.
    assert len(client.cookies[PENDING].value) < 800


def test_a_wrong_code_keeps_the_links_and_the_grants_expiry(client, site, alice):
    with freeze_time(datetime(2030, 1, 1, tzinfo=UTC)) as frozen:
        ask(client)
        message = last_mail()
        before = pending_payload(client)
        frozen.tick(timedelta(seconds=3600))
        response = enter_code(client, "AAAA-AAAA")
        assert response.status_code == 400
        after = pending_payload(client)
        assert after["links"] == before["links"] and after["expires"] == before["expires"]
        # The cookie still ends a week after the grant, not a week after the wrong code.
        assert response.cookies[PENDING]["max-age"] == str(86400 - 3600 + REMEMBER_LINKS)
        frozen.tick(timedelta(seconds=86400))
        assert open_again(client, message)["Location"] == VERIFICATION


def test_the_cookie_never_holds_the_token(client, site, alice):
    ask(client)
    message = last_mail()
    token = token_of(message)
    payload = pending_payload(client)
    text = json.dumps(payload)
    assert token not in text
    assert grant_hash(Email(), token, None, [SECRET]) not in text
    (row,) = VerificationToken.objects.all()
    assert row.token_hash not in text and row.code_hash not in text
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", payload["links"][0])  # 128 bits
    assert link_fingerprint(token) == payload["links"][0] != link_fingerprint(token + "0")


def test_a_used_cookie_forged_with_another_secret_is_none(client, site, alice):
    ask(client)
    message = last_mail()
    forged = jose.encode(
        token={"provider": "email", "links": [link_fingerprint(token_of(message))], "used": True},
        secret="another-secret-" + "x" * 30,
        salt=PENDING,
    )
    client.cookies[PENDING] = forged
    assert "only works in the browser" in open_again(client, message).content.decode()
    assert grants() == 1


@pytest.mark.parametrize(
    "links",
    [None, "abc", [7], ["short"], ["x" * 23]],
    ids=["absent", "a string", "a number", "too short", "too long"],
)
def test_a_cookie_whose_links_are_of_the_wrong_kind_knows_no_link(client, site, alice, links):
    ask(client)
    message = last_mail()
    payload = {**pending_payload(client), "expires": 1}  # its grant expired long ago
    del payload["links"]
    if links is not None:
        payload["links"] = links
    plant_pending(client, payload)
    assert "only works in the browser" in open_again(client, message).content.decode()


@pytest.mark.parametrize("expires", ["soon", True, 1.5e12, None])
def test_a_pending_cookie_with_an_expiry_of_the_wrong_kind_is_none(client, site, alice, expires):
    ask(client)
    message = last_mail()
    plant_pending(client, {**pending_payload(client), "expires": expires})
    response = enter_code_without_the_page(client, code_of(message))
    assert response.status_code == 400 and not signed_in_as(response)
    assert "only works in the browser" in response.content.decode()
    assert grants() == 1


def test_a_sign_in_with_a_cookie_that_kept_no_links_deletes_it(client, site, alice):
    # A cookie made before links were kept: after the sign-in nothing is worth keeping.
    ask(client)
    message = last_mail()
    payload = pending_payload(client)
    del payload["links"], payload["expires"]
    plant_pending(client, payload)
    response = confirm(client, message)
    assert signed_in_as(response) == "alice@example.com"
    assert response.cookies[PENDING]["max-age"] == "0"


def test_one_click_links_leave_the_asking_browser_a_used_cookie(client, site, alice):
    site(email=Email(confirm_link=False))
    ask(client)
    message = last_mail()
    response = open_again(client, message)
    assert signed_in_as(response) == "alice@example.com"
    assert_used_marker(response, message)
    assert open_again(client, message)["Location"] == VERIFICATION
    # Another browser, which has no cookie, gets none.
    ask(client)
    response = open_again(Client(), last_mail())
    assert signed_in_as(response) == "alice@example.com"
    assert PENDING not in response.cookies
