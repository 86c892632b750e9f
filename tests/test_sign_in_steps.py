"""A step between proving who this is and the session (issue 21): it plugs in without a flow.

A step registered in ``webauth.flows.steps.STEPS`` is asked after every
sign-in's storage, whatever the method: here a password in a browser, the
same password through the app route, and an email code. When it is needed,
no session is made (no cookie, no token, no ``sign_in`` event) and the step
answers the client; once passed, :func:`webauth.flows.signin.conclude` makes
the session as any sign-in would.
"""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from webauth.flows import steps as steps_module
from webauth.flows.outcomes import NeedsStep, SignedIn
from webauth.flows.render import for_browser
from webauth.flows.signin import conclude
from webauth.mfa.step import SECOND_FACTOR
from webauth.providers import DjangoCredentials, Email
from webauth.signals import signed_in as sign_in_signal

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"

pytestmark = pytest.mark.django_db


class TermsStep:
    """Accepting new terms, for the users in ``who``: a page for browsers, a word for apps."""

    name = "terms"

    def __init__(self, who: set[str], *, passed: bool = False) -> None:
        self.who = who
        self.passed = passed  # passed at once: conclude() right away
        self.seen: list[NeedsStep] = []

    def needed(self, state, signed_in: SignedIn) -> bool:
        return signed_in.user_dict.get("email") in self.who

    def browser_answer(self, state, pending: NeedsStep):
        self.seen.append(pending)
        if self.passed:
            done = conclude(state, pending.signed_in, pending.attempt)
            return for_browser(state, done, pending.attempt.callback_url)
        from webauth.responses import redirect

        return redirect("/terms/")

    def app_answer(self, state, pending: NeedsStep):
        self.seen.append(pending)
        return {"step": self.name}


@pytest.fixture
def site(settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "session": {"strategy": "jwt"},
        "bearer": True,
        "providers": [DjangoCredentials(), Email(from_email="Example <no-reply@example.com>")],
    }


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse"
    )


@pytest.fixture
def step():
    # Registered as a project would, from its AppConfig.ready().
    registered = TermsStep({"alice@example.com"})
    steps_module.STEPS.append(registered)
    yield registered
    steps_module.STEPS.remove(registered)


@pytest.fixture
def events():
    seen: list[dict] = []

    def receiver(sender, **kwargs):
        seen.append(kwargs)

    sign_in_signal.connect(receiver, weak=False)
    yield seen
    sign_in_signal.disconnect(receiver)


def password_sign_in(client: Client):
    csrf = client.get("/auth/csrf").json()["csrfToken"]
    return client.post(
        "/auth/callback/credentials",
        {"username": "alice", "password": "correct horse", "csrfToken": csrf},
    )


def test_a_needed_step_answers_the_browser_and_no_session_is_made(site, alice, step, events):
    client = Client()
    response = password_sign_in(client)
    assert response.status_code == 302
    assert response["Location"] == "/terms/"
    assert SESSION not in response.cookies
    assert events == []
    [pending] = step.seen
    assert pending.signed_in.user_dict["id"] == str(alice.pk)
    assert pending.attempt.provider_id == "credentials"


def test_a_step_not_needed_changes_nothing(site, alice, step, events):
    step.who = {"someone-else@example.com"}
    response = password_sign_in(Client())
    assert response.status_code == 302
    assert response.cookies[SESSION].value
    assert len(events) == 1
    assert step.seen == []


def test_a_passed_step_concludes_the_sign_in(site, alice, step, events):
    step.passed = True
    response = password_sign_in(Client())
    assert response.status_code == 302
    assert response["Location"] == "http://testserver"
    assert response.cookies[SESSION].value
    assert len(events) == 1
    session = Client()
    session.cookies[SESSION] = response.cookies[SESSION].value
    assert session.get("/auth/session").json()["user"]["email"] == "alice@example.com"


def test_the_app_route_gets_the_steps_answer_and_no_token(site, alice, step, events):
    response = Client().post(
        "/auth/app/signin/credentials",
        json.dumps({"username": "alice", "password": "correct horse"}),
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json() == {"step": "terms"}
    assert events == []


def test_an_email_code_sign_in_passes_through_the_step_too(site, alice, step, events):
    client = Client()
    csrf = client.get("/auth/csrf").json()["csrfToken"]
    sent = client.post("/auth/signin/email", {"email": "alice@example.com", "csrfToken": csrf})
    assert sent.status_code == 302
    [code] = re.findall(r"\b([0-9A-Z]{4}-[0-9A-Z]{4})\b", mail.outbox[-1].body)
    response = client.post("/auth/callback/email", {"csrfToken": csrf, "code": code})
    assert response.status_code == 302
    assert response["Location"] == "/terms/"
    assert SESSION not in response.cookies
    assert events == []
    [pending] = step.seen
    assert pending.attempt.provider_id == "email"


def test_nothing_is_asked_when_no_step_needs_it(site, alice, events):
    # webauth registers one step of its own, the second factor's: with
    # WEBAUTH["mfa"] off (the default) it asks nothing.
    assert steps_module.STEPS == [SECOND_FACTOR]
    response = password_sign_in(Client())
    assert response.cookies[SESSION].value
    assert len(events) == 1
