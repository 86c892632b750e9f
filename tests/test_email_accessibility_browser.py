"""Accessibility of the emails webauth sends, checked in a real browser.

The HTML part of each message (the sign-in email, with a code and with a link
only, and the account center's address-change email) is sent through Django's
email framework as a visitor's request sends it, then opened in Chromium and
checked by axe-core with the WCAG 2.1 A and AA rules, at a desktop and a phone
width, with webauth's colours and with a project's theme (logo, brand colour),
in English and in another language. Mail programs show messages in light
colours whatever the system's scheme, so only the light scheme is checked.

Without ``node_modules/axe-core`` or Chromium the test skips (it fails when
``WEBAUTH_REQUIRE_AXE`` or ``WEBAUTH_REQUIRE_BROWSER`` is set, as in CI).
"""

from __future__ import annotations

import itertools
import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client, RequestFactory
from django.urls import include, path
from django.utils import translation

from webauth.providers import DjangoCredentials, Email
from webauth.test import force_sign_in

from .support import a11y, tour
from .support.a11y import RUN_AXE, WCAG_21_AA
from .support.urls import urlpatterns as base_patterns

pytestmark = [pytest.mark.browser, pytest.mark.django_db]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"

urlpatterns = [path("account/", include("webauth.account.urls")), *base_patterns]

THEMES = {
    "webauth's colours": {},
    "a project's theme": {"logo": "/static/logo.png", "brand_color": "#0b6e4f"},
}
LANGUAGES = ("en", "de")
#: A new address for each message: the sending limit (email_send) counts per address.
_NUMBERS = itertools.count()


def configure(settings, theme, **email_options):
    settings.ROOT_URLCONF = __name__
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "theme": theme,
        "providers": [
            DjangoCredentials(),
            Email(from_email="Example <no-reply@example.com>", **email_options),
        ],
    }


def html_of(message):
    [(html, mimetype)] = message.alternatives
    assert mimetype == "text/html"
    return html


def sign_in_email(settings, theme, **email_options):
    configure(settings, theme, **email_options)
    mail.outbox.clear()
    client = Client()
    csrf = client.get("/auth/csrf").json()["csrfToken"]
    address = f"ada{next(_NUMBERS)}@example.com"
    response = client.post("/auth/signin/email", {"csrfToken": csrf, "email": address})
    assert response.status_code == 302, response.content
    [message] = mail.outbox
    return html_of(message)


def email_change_email(settings, theme):
    configure(settings, theme)
    mail.outbox.clear()
    number = next(_NUMBERS)
    user = get_user_model().objects.create_user(f"ada{number}", email=f"ada{number}@example.com")
    client = Client()
    force_sign_in(client, user)  # signed in just now: fresh enough to change the address
    new = f"new{number}@example.com"
    response = client.post("/account/email/", {"op": "send", "email": new})
    assert response.status_code == 200, response.content
    [message] = mail.outbox
    assert message.to == [new]
    return html_of(message)


def second_factor_email(settings, theme):
    """The notice of a reset (the same template says "added" and "removed")."""
    from webauth.conf import get_config
    from webauth.mfa.notices import notify

    configure(settings, theme)
    settings.WEBAUTH = {**settings.WEBAUTH, "mfa": {"enabled": True}}
    mail.outbox.clear()
    number = next(_NUMBERS)
    user = get_user_model().objects.create_user(f"ada{number}", email=f"ada{number}@example.com")
    assert notify(get_config(), user, "reset", RequestFactory().get("/"))
    [message] = mail.outbox
    return html_of(message)


def violations(page, html, name):
    """What axe-core finds in *html* at each window size, as text."""
    page.set_content(html)
    page.add_script_tag(path=a11y.axe_script())
    page.emulate_media(color_scheme="light")
    found = []
    for size, viewport in tour.SIZES.items():
        page.set_viewport_size(viewport)
        for violation in page.evaluate(RUN_AXE, WCAG_21_AA):
            for node in violation["nodes"]:
                found.append(
                    f"{name} ({size}): {violation['id']} at {node['target']}: "
                    f"{violation['help']}\n    {node['summary']}"
                )
    return found


def test_every_email_passes_axe(browser, settings):
    page = browser.new_page()
    problems = []
    checked = 0
    for theme_name, theme in THEMES.items():
        for language in LANGUAGES:
            with translation.override(language):
                messages = {
                    "sign-in email with a code": sign_in_email(settings, theme),
                    "sign-in email with a link only": sign_in_email(settings, theme, code=None),
                    "address-change email": email_change_email(settings, theme),
                    "second-factor notice": second_factor_email(settings, theme),
                }
            for kind, html in messages.items():
                # Read in its language (a screen reader picks its voice by it).
                assert re.search(rf'<html lang="{language}(-[a-z]+)?">', html), kind
                problems += violations(page, html, f"{kind}, {theme_name}, {language}")
                checked += 1
    page.close()
    assert checked == len(THEMES) * len(LANGUAGES) * 4
    assert not problems, "\n".join(problems)


def test_axe_finds_what_it_looks_for_in_an_email(browser, settings):
    # The check can fail: the same email with its button drawn in a colour too
    # light for its white label, and its language removed.
    html = sign_in_email(settings, {})
    broken = re.sub(r"background: #346df1", "background: #a0c4ff", html)
    broken = re.sub(r'<html lang="[^"]*">', "<html>", broken)
    assert broken != html
    page = browser.new_page()
    found = violations(page, broken, "broken")
    page.close()
    assert any("color-contrast" in line for line in found), found
    assert any("html-has-lang" in line for line in found), found
