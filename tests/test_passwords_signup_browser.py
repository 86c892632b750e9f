"""Sign-up in Chromium: a person creates an account with a password, both modes.

With ``verify_email`` (the default) the person fills in the form, reads the
code in the email, types it and is signed in; or opens the email's link in the
same browser and presses its one button. Without it, the form signs in at
once. The sign-up pages' tour stops (tests/support/tour.py, ``signup-*``) pass
axe-core here too, in both colour schemes and sizes (the whole tour runs in
tests/test_accessibility_browser.py).
"""

import re

import pytest
from django.contrib.auth import get_user_model

from webauth.models import UnprovenEmail

from .support import a11y, tour
from .support.browser import focus_lands_on

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def context(browser, live_server):
    assert live_server.url.startswith("http://localhost:"), live_server.url
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(30_000)
    yield context
    context.close()


@pytest.fixture
def site(context, live_server, settings):
    def configure(webauth):
        settings.WEBAUTH = webauth

    tour.create_people()
    return tour.Tour(browser_page=context.new_page(), base_url=live_server.url, configure=configure)


def _whoami(page):
    return page.context.request.get("/auth/session").json()


def test_sign_up_with_the_code(site):
    page = tour._signup_filled(site, "carol", "carol@example.com")
    assert page.get_by_role("heading", name="Check your email").is_visible()
    assert not get_user_model().objects.filter(username="carol").exists()
    [code] = re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", tour._signup_mail("carol@example.com").body)
    # The keyboard: the code field has the focus.
    assert focus_lands_on(page, "webauth-signup-code-input") == "webauth-signup-code-input"
    page.keyboard.type(code)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    carol = get_user_model().objects.get(username="carol")
    assert _whoami(page)["user"]["email"] == "carol@example.com"
    assert carol.check_password(tour.PASSWORD)
    assert not UnprovenEmail.objects.filter(user=carol).exists()


def test_sign_up_with_the_link(site):
    tour._signup_filled(site, "carol", "carol@example.com")
    page = site.browser_page
    page.goto(tour._signup_link(site, "carol@example.com"))
    with page.expect_navigation():
        page.click("#webauth-signup-confirm")
    assert _whoami(page)["user"]["email"] == "carol@example.com"


def test_sign_up_without_verification_signs_in_at_once(site):
    page = tour._signup_filled(site, "carol", "carol@example.com", verify=False)
    carol = get_user_model().objects.get(username="carol")
    assert _whoami(page)["user"]["email"] == "carol@example.com"
    assert UnprovenEmail.objects.filter(user=carol).exists()


def test_a_taken_address_looks_like_a_new_one(site):
    taken = tour._signup_filled(site, "zed", "alice@example.com").content()
    new = tour._signup_filled(site, "cid", "carol@example.com").content()
    # Two new visitors: their CSRF tokens differ, and nothing else.
    token = re.compile(r'name="csrfToken" value="[0-9a-f]+"')
    taken = token.sub("", taken.replace("alice@example.com", "?"))
    assert taken == token.sub("", new.replace("carol@example.com", "?"))
    owner = tour._signup_mail("alice@example.com")
    assert "tried to sign up" in owner.subject


def test_the_sign_up_pages_pass_axe(site):
    script = a11y.axe_script()
    problems = []
    for stop in tour.stops():
        if not stop.name.startswith("signup"):
            continue
        page = tour.visit(site, stop)
        page.add_script_tag(path=script)
        title, heading = page.title(), page.locator("h1").inner_text()
        if title != heading:
            problems.append(f"{stop.name}: title {title!r}, heading {heading!r}")
        problems += a11y.problems_of(page, stop.name)
        problems += a11y.unseen_focus(page, stop.name)
    assert not problems, "\n".join(problems)
