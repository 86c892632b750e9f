"""What follows a new password (webauth.passwords.changed), under both strategies."""

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.http import HttpResponse
from django.test import RequestFactory

from webauth import signals
from webauth.middleware import AuthMiddleware
from webauth.models import Session, TrustedBrowser
from webauth.passwords.changed import password_changed
from webauth.state import get_state
from webauth.test import force_sign_in

pytestmark = pytest.mark.django_db
SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"


@pytest.fixture
def site(settings):
    def configure(strategy="database", **options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
            "providers": ["webauth.providers.DjangoCredentials"],
            **options,
        }

    configure()
    return configure


@pytest.fixture
def ann(db):
    return get_user_model().objects.create_user(
        "ann", email="ann@example.com", password="old-password-1"
    )


def request_of(client):
    """A request as *client*'s browser makes it, through the middleware."""
    request = RequestFactory().get("/", HTTP_HOST="testserver")
    request.COOKIES[COOKIE] = client.cookies[COOKIE].value
    AuthMiddleware(lambda r: HttpResponse())(request)
    return request


def signed_in(client):
    return client.get("/auth/session").json() is not None


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_the_other_sessions_end_and_this_one_stays(site, ann, client_factory, strategy):
    site(strategy)
    here, there = client_factory(), client_factory()
    force_sign_in(here, ann)
    force_sign_in(there, ann)
    request = request_of(here)
    ann.set_password("new-password-2")
    ann.save()
    password_changed(request, ann, how="change", keep_current=True)
    # The answer to the request that changed it carries the session on (a JWT
    # re-issued with the new password's hash; the same database token).
    response = HttpResponse()
    get_state(request).finish(response)
    if COOKIE in response.cookies:
        here.cookies[COOKIE] = response.cookies[COOKIE].value
    assert signed_in(here)
    assert not signed_in(there)
    if strategy == "database":
        assert Session.objects.filter(user=ann).count() == 1


def test_without_keeping_the_current_every_session_ends(site, ann, client_factory):
    here, there = client_factory(), client_factory()
    force_sign_in(here, ann)
    force_sign_in(there, ann)
    request = request_of(here)
    ann.set_password("new-password-2")
    ann.save()
    password_changed(request, ann, how="reset", keep_current=False)
    assert Session.objects.filter(user=ann).count() == 0
    assert not signed_in(here) and not signed_in(there)


def test_trusted_browsers_are_forgotten(site, ann, client):
    from datetime import timedelta

    from django.utils import timezone

    TrustedBrowser.objects.create(
        user=ann, token_hash="a" * 64, expires=timezone.now() + timedelta(days=3)
    )
    force_sign_in(client, ann)
    password_changed(request_of(client), ann, how="change", keep_current=True)
    assert not TrustedBrowser.objects.filter(user=ann).exists()


def test_the_event_and_the_notice(site, ann, client):
    seen = []

    def receiver(sender, **kwargs):
        seen.append(kwargs)

    signals.password_changed.connect(receiver)
    try:
        force_sign_in(client, ann)
        request = request_of(client)
        password_changed(request, ann, how="set", keep_current=True)
    finally:
        signals.password_changed.disconnect(receiver)
    [event] = seen
    assert event["user"] is ann and event["how"] == "set" and event["request"] is request
    [message] = mail.outbox
    assert message.to == ["ann@example.com"]
    assert message.subject == "Your password was changed on testserver"
    assert "A password was set for your account." in message.body
    assert "Every other device" in message.body
    assert "ann@example.com" not in message.subject


def test_no_notice_when_turned_off_or_without_an_address(site, ann, client):
    site(passwords={"notify": False})
    force_sign_in(client, ann)
    password_changed(request_of(client), ann, how="change", keep_current=True)
    assert mail.outbox == []
    site()
    nobody = get_user_model().objects.create_user("nobody", password="x-password-3")
    force_sign_in(client, nobody)
    password_changed(request_of(client), nobody, how="change", keep_current=True)
    assert mail.outbox == []


def test_an_unknown_how_is_refused(site, ann, client):
    force_sign_in(client, ann)
    with pytest.raises(ValueError, match="how must be one of"):
        password_changed(request_of(client), ann, how="guess", keep_current=True)


def test_a_notice_that_cannot_be_sent_is_logged_and_the_change_stands(
    site, ann, client, settings, caplog
):
    settings.EMAIL_BACKEND = "tests.test_passwords_changed.FailingBackend"
    force_sign_in(client, ann)
    password_changed(request_of(client), ann, how="change", keep_current=True)
    assert any("The password notice could not be sent" in r.getMessage() for r in caplog.records)


class FailingBackend:
    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        raise OSError("no mail server")
