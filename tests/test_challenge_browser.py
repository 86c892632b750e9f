"""The bot challenge in a real browser: its page states pass axe-core, and a person signs in.

The service's script cannot load here (no network), so the browser gets a
stand-in for it (Playwright routes ``challenges.cloudflare.com``): it does what
Turnstile's script does for a solved widget, puts the answer in the form's
``cf-turnstile-response``. The answer is a token of the local fake of
Turnstile's verify endpoint (tests/support/challenge_fakes.py), which the server
asks. The page states are the tour's (tests/support/tour.py), which
tests/test_accessibility_browser.py walks with every other page.
"""

import pytest

from .support import a11y, tour
from .support.challenge_fakes import FakeVerifier

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


def test_the_challenge_s_page_states_pass_axe_in_both_schemes_and_sizes(site):
    script = a11y.axe_script()
    problems = []
    stops = [stop for stop in tour.stops() if stop.challenge]
    assert [s.name for s in stops] == [
        "signin-challenge",
        "signin-challenge-missing",
        "signin-challenge-refused",
    ]
    for stop in stops:
        page = tour.visit(site, stop)
        assert page.locator("form .cf-turnstile .webauth-challenge-stand-in").count() == 2, (
            stop.name
        )
        page.add_script_tag(path=script)
        problems += a11y.problems_of(page, stop.name)
        problems += a11y.unseen_focus(page, stop.name)
    assert not problems, "\n".join(problems)


def _solved_widget(token):
    # What Turnstile's script leaves in a solved widget: its answer in the form's field.
    return f"""
for (const el of document.querySelectorAll(".cf-turnstile")) {{
  const field = document.createElement("input");
  field.type = "hidden"; field.name = "cf-turnstile-response"; field.value = {token!r};
  el.appendChild(field);
}}
"""


def test_a_person_signs_in_through_the_widget(context, live_server, settings):
    with FakeVerifier("turnstile", tour.CHALLENGE["secret_key"]) as fake:
        webauth = tour.site_settings(live_server.url)
        settings.WEBAUTH = {**webauth, "challenge": {**tour.CHALLENGE, "verify_url": fake.url}}
        tour.create_people()
        token = fake.issue(hostname="localhost")
        page = context.new_page()
        page.route(
            "https://challenges.cloudflare.com/**",
            lambda route: route.fulfill(
                status=200, content_type="text/javascript", body=_solved_widget(token)
            ),
        )
        page.goto("/auth/signin?callbackUrl=/whoami/")
        page.locator("form[data-provider=credentials] [name=cf-turnstile-response]").wait_for(
            state="attached"
        )
        page.fill("#input-username-for-credentials", "alice")
        page.fill("#input-password-for-credentials", tour.PASSWORD)
        with page.expect_navigation():
            page.press("#input-password-for-credentials", "Enter")
        assert page.url.endswith("/whoami/")
        assert fake.sent()[0]["response"] == token

        # Without the script (a browser that blocks it), the form goes without an answer.
        page.context.clear_cookies()
        page.unroute("https://challenges.cloudflare.com/**")
        page.route("https://challenges.cloudflare.com/**", lambda route: route.abort())
        page.goto("/auth/signin")
        page.fill("#input-username-for-credentials", "alice")
        page.fill("#input-password-for-credentials", tour.PASSWORD)
        with page.expect_navigation():
            page.press("#input-password-for-credentials", "Enter")
        assert "error=ChallengeFailed&code=missing" in page.url
        assert page.locator("#webauth-signin-error").inner_text() == (
            "Please complete the security check, then try again."
        )
        assert page.input_value("#input-username-for-credentials") == "alice"
        assert len(fake.requests) == 1
