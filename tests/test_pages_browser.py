"""Real-browser tests: Debian's Chromium, driven by Playwright, against the live server.

They sign in through the built-in pages exactly as a user does (forms, cookies,
redirects), which the test client cannot vouch for. Playwright's own browser
downloads are never used: the tests skip when ``/usr/bin/chromium`` is absent, or
fail when ``WEBAUTH_REQUIRE_BROWSER`` is set (as CI does; tests/support/browser.py).
"""

from urllib.parse import quote, urlsplit

import pytest

from webauth.pages import SIGNIN_ERRORS

PASSWORD = "correct horse battery staple"

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser, live_server):
    """A fresh browser profile (no cookies) per test."""
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(30_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )


def whoami(page):
    """``/whoami/`` as this browser sees it (its cookies, same origin)."""
    return page.evaluate("() => fetch('/whoami/').then((r) => r.json())")


def session_cookies(page):
    return [c for c in page.context.cookies() if "authjs.session-token" in c["name"]]


def path_of(url):
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def submit_credentials(page, username, password):
    page.fill("#input-username-for-credentials", username)
    page.fill("#input-password-for-credentials", password)
    with page.expect_navigation():
        page.click("form[data-provider=credentials] button[type=submit]")


def test_sign_in_lands_on_callback_url_signed_in(page, live_server, alice):
    callback = f"{live_server.url}/account/settings/"
    page.goto(f"/auth/signin?callbackUrl={quote(callback)}")
    assert page.locator("h1").inner_text() == "Sign in"
    assert page.locator(".webauth-error").count() == 0

    submit_credentials(page, "alice", PASSWORD)

    assert page.url == callback
    me = whoami(page)
    assert me["authenticated"] is True
    assert me["username"] == "alice"
    assert me["session"]["user"]["email"] == "alice@example.com"
    [cookie] = session_cookies(page)
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Lax"


def test_wrong_password_shows_the_error_then_retry_succeeds(page, live_server, alice):
    callback = f"{live_server.url}/account/settings/"
    page.goto(f"/auth/signin?callbackUrl={quote(callback)}")

    submit_credentials(page, "alice", "wrong password")

    assert path_of(page.url) == "/auth/signin?error=CredentialsSignin&code=credentials"
    alert = page.locator(".webauth-error[role=alert]")
    assert alert.get_attribute("data-error") == "CredentialsSignin"
    assert alert.inner_text() == str(SIGNIN_ERRORS["CredentialsSignin"])
    assert session_cookies(page) == []
    assert whoami(page)["authenticated"] is False
    # The username is still there, the password is not (issue 13, point 7).
    assert page.input_value("#input-username-for-credentials") == "alice"
    assert page.input_value("#input-password-for-credentials") == ""

    # The page remembers where the user was going (the callback-url cookie).
    submit_credentials(page, "alice", PASSWORD)
    assert page.url == callback
    assert whoami(page)["username"] == "alice"


def test_sign_out_page_clears_the_session(page, live_server, alice):
    page.goto("/auth/signin")
    submit_credentials(page, "alice", PASSWORD)
    assert whoami(page)["authenticated"] is True

    page.goto("/auth/signout")
    assert page.locator("h1").inner_text() == "Sign out"
    with page.expect_navigation():
        page.click("#submitButton")

    assert page.url.rstrip("/") == live_server.url  # where the sign-in had landed
    assert session_cookies(page) == []
    me = whoami(page)
    assert me["authenticated"] is False
    assert me["session"] is None
    assert page.evaluate("() => fetch('/auth/session').then((r) => r.json())") is None


def test_auth_required_page_round_trips_through_sign_in(page, live_server, alice):
    page.goto("/private/?tab=2")

    assert path_of(page.url) == (
        "/auth/signin?callbackUrl=%2Fprivate%2F%3Ftab%3D2&error=SessionRequired"
    )
    # The page says why (issue 13, point 7).
    alert = page.locator(".webauth-error[role=alert]")
    assert alert.inner_text() == "Please sign in to access this page."
    submit_credentials(page, "alice", PASSWORD)

    assert page.url == f"{live_server.url}/private/?tab=2"
    body = page.evaluate("() => fetch('/private/').then((r) => r.json())")
    assert body["session"]["user"]["email"] == "alice@example.com"


def test_signin_buttons_template_tag_signs_in_and_returns(page, live_server, alice):
    page.goto("/buttons/")
    assert page.locator("#buttons form[data-provider=credentials]").count() == 1

    submit_credentials(page, "alice", PASSWORD)

    assert page.url == f"{live_server.url}/buttons/"
    assert whoami(page)["username"] == "alice"


def test_inactive_user_cannot_sign_in(page, live_server, alice):
    alice.is_active = False
    alice.save()
    page.goto("/auth/signin")

    submit_credentials(page, "alice", PASSWORD)

    assert page.locator(".webauth-error").get_attribute("data-error") == "CredentialsSignin"
    assert session_cookies(page) == []


def test_form_whose_csrf_cookie_is_gone_asks_to_try_again(page, live_server, alice):
    page.goto("/auth/signin")
    page.context.clear_cookies()  # e.g. the browser was restarted with the tab open

    submit_credentials(page, "alice", PASSWORD)

    assert page.locator(".webauth-error").get_attribute("data-error") == "MissingCSRF"
    assert session_cookies(page) == []
    submit_credentials(page, "alice", PASSWORD)  # the reloaded page carries a fresh token
    assert whoami(page)["username"] == "alice"


def test_back_after_sign_out_fetches_the_private_page_again(page, live_server, alice):
    # Issue 13, point 1: the page behind @auth_required is "private, no-store", so
    # Back after signing out asks the server again (which sends the visitor to
    # sign in) instead of showing "Hello, alice." from the browser's cache.
    page.goto("/private-page/")
    submit_credentials(page, "alice", PASSWORD)
    assert page.url == f"{live_server.url}/private-page/"
    assert page.locator("h1").inner_text() == "Hello, alice."

    with page.expect_navigation():
        page.click("#sign-out")
    assert page.url == f"{live_server.url}/"
    assert session_cookies(page) == []

    page.go_back(wait_until="load")
    assert "Hello" not in page.content()
    assert path_of(page.url) == "/auth/signin?callbackUrl=%2Fprivate-page%2F&error=SessionRequired"
    assert page.locator("h1").inner_text() == "Sign in"


def test_an_expired_sign_out_form_shows_the_sign_out_page_again(page, live_server, alice):
    # Issue 13, point 5: the sign-out page was left open while its CSRF cookie
    # went away (another tab, the browser's cookie clean-up). Pressing "Sign out"
    # lands on the sign-out page again, saying so, still signed in.
    page.goto("/auth/signin")
    submit_credentials(page, "alice", PASSWORD)
    page.goto("/auth/signout")
    page.context.clear_cookies(name="authjs.csrf-token")

    with page.expect_navigation():
        page.click("#submitButton")
    assert path_of(page.url) == "/auth/signout?error=MissingCSRF"
    alert = page.locator(".webauth-error[role=alert]")
    assert alert.inner_text() == "Your sign-out form expired. Please try again."
    assert whoami(page)["authenticated"] is True
    assert len(session_cookies(page)) == 1

    with page.expect_navigation():
        page.click("#submitButton")
    assert session_cookies(page) == []
    assert whoami(page)["authenticated"] is False
