"""webauth/openapi.json against the password routes' real answers, one by one.

The contract test (tests/test_openapi_contract.py) generates requests for every
operation, but it cannot read the email: it never gets past the first answer of
a sign-up or a reset, and it runs without the bot challenge. Here each answer
the description gives for those routes (sign-up, the password reset, their app
routes, and the bot challenge's ``400 ChallengeFailed`` on the sign-in routes)
is produced through Django's test client, the codes read from the sent mail,
and checked against the operation's described answer for its status: the
content type, the required headers and the JSON body's schema.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from webauth.openapi import load_description
from webauth.passwords import reset
from webauth.passwords import signup as signup_flow
from webauth.providers import DjangoCredentials, Email

from .support.helpers import csrf_pair

pytestmark = pytest.mark.django_db

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery 9"
NEW = "a brand new password 2"
CODE = re.compile(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b")
FIELD = "cf-turnstile-response"
DOC = load_description()


def described(response, path: str, method: str):
    """Fail unless *response* is an answer ``paths[path][method]`` describes; return it.

    Its status must be described; where the described answer has content, the
    response's content type must be one of them, and a JSON body must fit its
    schema; each required header must be there.
    """
    operation = DOC["paths"][path][method]
    answer = operation["responses"].get(str(response.status_code))
    assert answer is not None, f"{method.upper()} {path}: {response.status_code} is not described"
    answer = _resolved(answer)
    for name, header in answer.get("headers", {}).items():
        if _resolved(header).get("required"):
            assert response.has_header(name), f"{method.upper()} {path}: no {name} header"
    content = answer.get("content")
    if not content:
        return response
    content_type = response["Content-Type"].split(";")[0].strip()
    assert content_type in content, f"{method.upper()} {path}: {content_type} is not described"
    if content_type == "application/json":
        schema = {**content[content_type]["schema"], "components": DOC["components"]}
        validator = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.FormatChecker()
        )
        validator.validate(json.loads(response.content))
    return response


def _resolved(item: dict[str, Any]) -> dict[str, Any]:
    ref = item.get("$ref")
    if ref is None:
        return item
    _, _, kind, name = ref.split("/")
    return DOC["components"][kind][name]


def app_post(path: str, body: object, client: Client | None = None, **extra):
    client = client or Client()
    return client.post(f"/auth{path}", json.dumps(body), content_type="application/json", **extra)


def mailed_code(address: str) -> str:
    """The code of the last message to *address* (sign-up's or the reset's)."""
    signup_flow.wait_for_mail()
    assert reset.outbox.flush()
    [*_, message] = [m for m in mail.outbox if m.to == [address]]
    [code] = CODE.findall(message.body)
    return code


@pytest.fixture(autouse=True)
def _mail_sent():
    # A message of this test must not land in the next test's outbox.
    yield
    signup_flow.wait_for_mail()
    assert reset.outbox.flush()


@pytest.fixture
def site(settings):
    def configure(**options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "bearer": True,
            "openapi": True,
            "providers": [DjangoCredentials(), Email(from_email="no-reply@example.com")],
            "passwords": {"signup": True, "reset": True},
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )


def challenge(**options) -> dict[str, object]:
    """The bot challenge on everything; a missing or malformed answer never reaches the service."""
    return {
        "challenge": {
            "service": "turnstile",
            "site_key": "0xSITE-KEY",
            "secret_key": "0xSECRET",
            "verify_url": "http://127.0.0.1:9/siteverify",
            **options,
        }
    }


def form(**fields) -> dict[str, str]:
    return {
        "username": "bea",
        "email": "bea@example.com",
        "password1": PASSWORD,
        "password2": PASSWORD,
        **fields,
    }


# -- POST /app/signup --------------------------------------------------------------------------


def test_app_signup_the_step_then_the_session_token(site):
    step = described(app_post("/app/signup", form()), "/app/signup", "post")
    assert step.status_code == 200 and step.json()["step"] == "verify_email"
    token = step.json()["signupToken"]
    wrong = described(
        app_post("/app/signup", {"signupToken": token, "code": "0000-0000"}), "/app/signup", "post"
    )
    assert wrong.status_code == 401 and wrong.json() == {"error": "Verification"}
    code = mailed_code("bea@example.com")
    done = described(
        app_post("/app/signup", {"signupToken": token, "code": code}), "/app/signup", "post"
    )
    assert done.status_code == 200 and done.json()["tokenType"] == "Bearer"


def test_app_signup_taken_once_proven(site):
    # The username, by another sign-up that proved its own address first.
    first = app_post("/app/signup", form()).json()["signupToken"]
    first_code = mailed_code("bea@example.com")
    second = app_post("/app/signup", form(email="bee@example.com")).json()["signupToken"]
    second_code = mailed_code("bee@example.com")
    assert app_post("/app/signup", {"signupToken": second, "code": second_code}).status_code == 200
    taken = described(
        app_post("/app/signup", {"signupToken": first, "code": first_code}), "/app/signup", "post"
    )
    assert taken.status_code == 409
    assert taken.json() == {"error": "SignupTaken", "field": "username"}
    # The address, by an account made meanwhile.
    third = app_post("/app/signup", form(username="cy", email="cy@example.com")).json()
    code = mailed_code("cy@example.com")
    get_user_model().objects.create_user("cyrus", email="cy@example.com")
    taken = described(
        app_post("/app/signup", {"signupToken": third["signupToken"], "code": code}),
        "/app/signup",
        "post",
    )
    assert taken.status_code == 409 and taken.json() == {"error": "SignupTaken", "field": "email"}


def test_app_signup_without_verify_email(site, alice):
    site(passwords={"signup": {"verify_email": False}})
    now = described(app_post("/app/signup", form()), "/app/signup", "post")
    assert now.status_code == 200 and "sessionToken" in now.json()
    taken = described(
        app_post("/app/signup", form(username="ann", email="alice@example.com")),
        "/app/signup",
        "post",
    )
    assert taken.status_code == 200 and taken.json() == {"step": "check_email"}


def test_app_signup_refusals(site):
    errors = described(app_post("/app/signup", form(password2="other")), "/app/signup", "post")
    assert errors.status_code == 400 and errors.json()["error"] == "InvalidRequest"
    assert "password2" in errors.json()["fields"]
    not_json = described(
        Client().post("/auth/app/signup", {"username": "bea"}), "/app/signup", "post"
    )
    assert not_json.status_code == 400 and "message" in not_json.json()
    site(rate_limits={"signup": "1/m/ip"})
    assert app_post("/app/signup", form()).status_code == 200
    limited = described(
        app_post("/app/signup", form(email="cy@example.com")), "/app/signup", "post"
    )
    assert limited.status_code == 429


@pytest.mark.parametrize("off", [{"bearer": False}, {"passwords": {"reset": True}}])
def test_app_signup_off(site, off):
    site(**off)
    answer = described(app_post("/app/signup", form()), "/app/signup", "post")
    assert answer.status_code == 404 and answer.json() == {"error": "UnknownAction"}


# -- POST /app/reset and /app/reset/confirm ----------------------------------------------------


def test_app_reset_with_the_code(site, alice):
    asked = described(app_post("/app/reset", {"identifier": "alice"}), "/app/reset", "post")
    assert asked.status_code == 200 and asked.json()["sent"] is True
    ticket = asked.json()["resetToken"]
    wrong = described(
        app_post(
            "/app/reset/confirm", {"resetToken": ticket, "code": "0000-0000", "password": NEW}
        ),
        "/app/reset/confirm",
        "post",
    )
    assert wrong.status_code == 401
    code = mailed_code("alice@example.com")
    done = described(
        app_post("/app/reset/confirm", {"resetToken": ticket, "code": code, "password": NEW}),
        "/app/reset/confirm",
        "post",
    )
    assert done.status_code == 200 and done.json() == {"reset": True}


def test_app_reset_a_refused_password_then_its_token(site, alice, settings):
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    ]
    ticket = app_post("/app/reset", {"identifier": "alice@example.com"}).json()["resetToken"]
    code = mailed_code("alice@example.com")
    short = described(
        app_post("/app/reset/confirm", {"resetToken": ticket, "code": code, "password": "short"}),
        "/app/reset/confirm",
        "post",
    )
    assert short.status_code == 400 and short.json()["error"] == "InvalidPassword"
    similar = described(
        app_post(
            "/app/reset/confirm",
            {"resetToken": ticket, "code": code, "password": "alice@example.com"},
        ),
        "/app/reset/confirm",
        "post",
    )
    body = similar.json()
    assert similar.status_code == 400 and {"token", "resetToken"} <= set(body)
    done = described(
        app_post(
            "/app/reset/confirm",
            {"resetToken": body["resetToken"], "token": body["token"], "password": NEW},
        ),
        "/app/reset/confirm",
        "post",
    )
    assert done.status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/app/reset", {}, 400),
        ("/app/reset", {"identifier": "a" * 5000}, 400),
        (
            "/app/reset/confirm",
            {"resetToken": "x", "code": "x", "token": "y", "password": NEW},
            400,
        ),
        ("/app/reset/confirm", {"resetToken": "x", "code": "x", "password": NEW}, 401),
        ("/app/reset/confirm", {"resetToken": "x", "token": "y", "password": NEW}, 401),
    ],
)
def test_app_reset_refusals(site, path, body, status):
    answer = described(app_post(path, body), path, "post")
    assert answer.status_code == status


def test_app_reset_limited_and_off(site, alice):
    site(rate_limits={"password_reset": "1/m/ip"})
    assert app_post("/app/reset", {"identifier": "alice"}).status_code == 200
    limited = described(app_post("/app/reset", {"identifier": "zoe"}), "/app/reset", "post")
    assert limited.status_code == 429
    site(passwords={"signup": True})
    for path in ("/app/reset", "/app/reset/confirm"):
        off = described(app_post(path, {"identifier": "alice"}), path, "post")
        assert off.status_code == 404


# -- the browser routes -------------------------------------------------------------------------


def test_signup_in_the_browser(site):
    client = Client()
    described(client.get("/auth/signup"), "/signup", "get")
    token = csrf_pair(client)
    sent = described(client.post("/auth/signup", {"csrfToken": token, **form()}), "/signup", "post")
    assert sent.status_code == 200 and sent["Content-Type"].startswith("text/html")
    wrong = described(
        client.post("/auth/signup", {"csrfToken": token, "code": "0000-0000"}), "/signup", "post"
    )
    assert wrong.status_code == 400
    code = mailed_code("bea@example.com")
    done = described(
        client.post(
            "/auth/signup", {"csrfToken": token, "code": code}, HTTP_X_AUTH_RETURN_REDIRECT="1"
        ),
        "/signup",
        "post",
    )
    assert done.status_code == 200 and "url" in done.json()
    no_csrf = described(Client().post("/auth/signup", form()), "/signup", "post")
    assert no_csrf.status_code == 302


def test_signup_refusals_in_the_browser(site, alice):
    client = Client()
    token = csrf_pair(client)
    errors = described(
        client.post("/auth/signup", {"csrfToken": token, **form(password2="x")}), "/signup", "post"
    )
    assert errors.status_code == 400
    stranger = Client()
    expired = described(
        stranger.post("/auth/signup", {"csrfToken": csrf_pair(stranger), "code": "1234-5678"}),
        "/signup",
        "post",
    )
    assert expired.status_code == 400  # no sign-up waits in this browser
    # Two browsers sign up with one username; the first to prove its address takes it.
    other = Client()
    other_token = csrf_pair(other)
    client.post("/auth/signup", {"csrfToken": token, **form(email="bee@example.com")})
    first = mailed_code("bee@example.com")
    other.post("/auth/signup", {"csrfToken": other_token, **form()})
    second = mailed_code("bea@example.com")
    assert client.post("/auth/signup", {"csrfToken": token, "code": first}).status_code == 302
    taken = described(
        other.post("/auth/signup", {"csrfToken": other_token, "code": second}), "/signup", "post"
    )
    assert taken.status_code == 409
    site(rate_limits={"signup": "1/m/ip"})
    fresh = Client()
    fresh_token = csrf_pair(fresh)
    fresh.post("/auth/signup", {"csrfToken": fresh_token, **form(email="cy@example.com")})
    limited = described(
        fresh.post("/auth/signup", {"csrfToken": fresh_token, **form(email="di@example.com")}),
        "/signup",
        "post",
    )
    assert limited.status_code == 429


def test_the_reset_in_the_browser(site, alice):
    client = Client()
    described(client.get("/auth/reset"), "/reset", "get")
    token = csrf_pair(client)
    asked = described(
        client.post("/auth/reset", {"csrfToken": token, "identifier": "alice"}), "/reset", "post"
    )
    assert asked.status_code == 302
    described(client.get("/auth/reset/sent"), "/reset/sent", "get")
    described(client.get("/auth/reset/confirm?token=nothing"), "/reset/confirm", "get")
    fields = {"csrfToken": token, "new_password1": NEW, "new_password2": NEW}
    wrong = described(
        client.post("/auth/reset/confirm", {**fields, "code": "0000-0000"}),
        "/reset/confirm",
        "post",
    )
    assert wrong.status_code == 400
    code = mailed_code("alice@example.com")
    done = described(
        client.post("/auth/reset/confirm", {**fields, "code": code}), "/reset/confirm", "post"
    )
    assert done.status_code == 302
    page = described(client.get("/auth/reset/done"), "/reset/done", "get")
    assert page.status_code == 200
    elsewhere = described(Client().get("/auth/reset/done"), "/reset/done", "get")
    assert elsewhere.status_code == 302
    as_json = described(
        Client().get("/auth/reset/done", HTTP_X_AUTH_RETURN_REDIRECT="1"), "/reset/done", "get"
    )
    assert as_json.status_code == 200 and "url" in as_json.json()


def test_the_reset_s_refusals_in_the_browser(site):
    client = Client()
    token = csrf_pair(client)
    invalid = described(
        client.post("/auth/reset", {"csrfToken": token, "identifier": ""}), "/reset", "post"
    )
    assert invalid.status_code == 400
    no_ticket = described(
        Client().post("/auth/reset/confirm", {"code": "1234-5678"}), "/reset/confirm", "post"
    )
    assert no_ticket.status_code == 400
    site(rate_limits={"password_reset": "1/m/ip"})
    client.post("/auth/reset", {"csrfToken": token, "identifier": "alice"})
    limited = described(
        client.post("/auth/reset", {"csrfToken": token, "identifier": "zoe"}), "/reset", "post"
    )
    assert limited.status_code == 429


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/signup", "get"),
        ("/signup", "post"),
        ("/reset", "get"),
        ("/reset", "post"),
        ("/reset/sent", "get"),
        ("/reset/confirm", "get"),
        ("/reset/confirm", "post"),
        ("/reset/done", "get"),
    ],
)
def test_the_browser_routes_off(site, path, method):
    site(passwords={})
    answer = described(getattr(Client(), method)(f"/auth{path}"), path, method)
    assert answer.status_code == 400 and answer.json() == "Bad request."


# -- the bot challenge --------------------------------------------------------------------------


def test_the_app_routes_the_challenge_guards(site, alice):
    site(**challenge())
    for path, body in (
        ("/app/signin/credentials", {"username": "alice", "password": PASSWORD}),
        ("/app/signin/email", {"email": "alice@example.com"}),
        ("/app/signup", form()),
        ("/app/reset", {"identifier": "alice"}),
    ):
        route = "/app/signin/{provider_id}" if path.startswith("/app/signin/") else path
        missing = described(app_post(path, body), route, "post")
        assert missing.status_code == 400 and missing.json()["code"] == "missing"
        assert missing.json()["challenge"]["field"] == FIELD
        refused = described(app_post(path, {**body, FIELD: "not a token"}), route, "post")
        assert refused.status_code == 400 and refused.json()["code"] == "refused"


def test_the_sign_in_routes_answer_json_clients_the_challenge(site, alice):
    site(**challenge())
    client = Client()
    token = csrf_pair(client)
    for path, body in (
        ("/callback/credentials", {"username": "alice", "password": PASSWORD}),
        ("/signin/email", {"email": "alice@example.com"}),
    ):
        route = "/" + path.split("/")[1] + "/{provider_id}"
        answer = client.post(
            f"/auth{path}", {"csrfToken": token, **body}, HTTP_X_AUTH_RETURN_REDIRECT="1"
        )
        described(answer, route, "post")
        assert answer.status_code == 400 and answer.json()["error"] == "ChallengeFailed"
        assert "url" in answer.json()
        browser = described(
            client.post(f"/auth{path}", {"csrfToken": token, **body}), route, "post"
        )
        assert browser.status_code == 302
