"""The example project starts: system checks pass, it migrates, its setup runs, and
it signs in by email out of the box (its development outbox shows the message)."""

import html
import os
import re
import signal
import socket
import subprocess
import sys
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import pyotp
import pytest
import requests

from .support.helpers import wait_until_serving

# The example runs in subprocesses on its own SQLite file, whatever the suite's
# database is: CI runs this module once (tests/conftest.py, .ci/run).
pytestmark = pytest.mark.backend_independent

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def manage(*args, env):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def env(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AUTH_", "DJANGO_"))}
    return {
        **clean,
        "EXAMPLE_DB": str(tmp_path / "example.sqlite3"),
        "EXAMPLE_OUTBOX": str(tmp_path / "outbox.json"),
        "PORT": "8123",
    }


def test_example_project_checks_migrates_and_sets_up(env):
    for args in (["check", "--fail-level", "WARNING"], ["migrate", "-v", "0"], ["example_setup"]):
        result = manage(*args, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
    assert "Demo user: demo / demo-password" in result.stdout
    assert "Example IdP user: idp-alice / idp-password" in result.stdout
    again = manage("example_setup", env=env)  # idempotent
    assert again.returncode == 0 and "(created)" not in again.stdout


def test_github_button_appears_with_its_environment_variables(env):
    code = (
        "from webauth.conf import get_config; print(sorted(p.id for p in get_config().providers))"
    )
    plain = manage("shell", "--no-imports", "-c", code, env=env)
    with_github = manage(
        "shell",
        "--no-imports",
        "-c",
        code,
        env={**env, "AUTH_GITHUB_ID": "x", "AUTH_GITHUB_SECRET": "y"},
    )
    assert plain.stdout.strip() == "['credentials', 'email', 'example-idp', 'passkey']", (
        plain.stderr
    )
    assert (
        with_github.stdout.strip() == "['credentials', 'email', 'example-idp', 'github', 'passkey']"
    )


def test_outbox_is_routed_only_with_debug(env):
    """Without DEBUG, /dev/outbox/ is no URL at all (not a view that answers 404)."""
    code = """
import importlib
from django.conf import settings
from django.urls import Resolver404, clear_url_caches, resolve

def routed():
    try:
        return resolve("/dev/outbox/").url_name
    except Resolver404:
        return None

settings.DEBUG = False
urls = importlib.import_module(settings.ROOT_URLCONF)
off = routed()
settings.DEBUG = True
importlib.reload(urls)
clear_url_caches()
print(off, routed())
"""
    result = manage("shell", "--no-imports", "-c", code, env=env)
    assert result.stdout.strip() == "None dev-outbox", result.stdout + result.stderr


# -- email sign-in on the running example -------------------------------------------------


class Forms(HTMLParser):
    """The forms of a page: action and the inputs' name -> value, by the form's id."""

    def __init__(self, text):
        super().__init__()
        self.forms = {}
        self._current = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form":
            self._current = {"action": attributes.get("action"), "fields": {}}
            self.forms[attributes.get("id") or attributes.get("data-provider")] = self._current
        elif tag == "input" and self._current is not None and attributes.get("name"):
            self._current["fields"][attributes["name"]] = attributes.get("value") or ""

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_example(env, tmp_path, host):
    """The example project as ./scripts/example runs it: migrated, set up for its port,
    served by runserver with its autoreloader.

    The reloader runs the site in a child process that it restarts on changes; the
    outbox must work there (it is a file, not the process's memory).
    """
    port = free_port()
    env = {**env, "PORT": str(port)}
    for args in (["migrate", "-v", "0"], ["example_setup"]):
        done = manage(*args, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    log = open(tmp_path / "runserver.log", "w")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"{host}:{port}"],
        cwd=EXAMPLE,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the reloader's child goes too
    )
    base = f"http://{host}:{port}"
    try:
        wait_until_serving(base, server, tmp_path / "runserver.log")
        yield base, tmp_path / "runserver.log"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


@pytest.fixture
def example_server(env, tmp_path):
    with running_example(env, tmp_path, "127.0.0.1") as running:
        yield running


def ask_for_email(browser, base, address, callback):
    csrf = browser.get(f"{base}/auth/csrf").json()["csrfToken"]
    sent = browser.post(
        f"{base}/auth/signin/email",
        data={"csrfToken": csrf, "email": address, "callbackUrl": callback},
        allow_redirects=False,
    )
    assert sent.status_code == 302, sent.text[:500]
    assert sent.headers["Location"] == f"{base}/auth/verify-request?provider=email&type=email"


def outbox_message(browser, base, address):
    """The newest message to *address* on /dev/outbox/: its clickable link and its code."""
    page = browser.get(f"{base}/dev/outbox/")
    assert page.status_code == 200
    assert page.headers["Cache-Control"] == "no-store"
    article = page.text.split('<article class="outbox-message"')[1]  # the newest
    assert f"<dd>{address}</dd>" in article
    links = re.findall(r'<a href="([^"]*/auth/callback/email\?[^"]*)"', article)
    codes = set(re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", article))
    assert len(links) == 1 and len(codes) == 1, article
    return html.unescape(links[0]), codes.pop()


def session_of(browser, base):
    return browser.get(f"{base}/auth/session").json()


def test_email_sign_in_through_the_example(example_server):
    base, log = example_server
    person = requests.Session()
    assert 'id="outbox-empty"' in person.get(f"{base}/dev/outbox/").text
    home = person.get(f"{base}/").text
    assert 'href="/dev/outbox/"' in home and 'data-provider="email"' in home

    # The link: opened in the browser that asked, it shows one button; pressing it signs in.
    ask_for_email(person, base, "Reader@Example.com", f"{base}/private/")
    link, _ = outbox_message(person, base, "reader@example.com")
    assert link.startswith(f"{base}/auth/callback/email?")
    confirm = person.get(link)
    assert confirm.status_code == 200
    form = Forms(confirm.text).forms["webauth-email-confirm-form"]
    signed_in = person.post(
        urljoin(base, form["action"]), data=form["fields"], allow_redirects=False
    )
    assert signed_in.status_code == 302 and signed_in.headers["Location"] == f"{base}/private/"
    assert session_of(person, base)["user"]["email"] == "reader@example.com"
    assert person.get(f"{base}/private/", allow_redirects=False).status_code == 200
    # The nav links the account center, which is routed and shows the address.
    assert 'href="/account/">Account</a>' in person.get(f"{base}/").text
    account = person.get(f"{base}/account/email/", allow_redirects=False)
    assert account.status_code == 200 and "<dd data-email>reader@example.com</dd>" in account.text
    # Signed in, the pending cookie is gone: the same form again is a page that says
    # where to finish, not a second session.
    again = person.post(urljoin(base, form["action"]), data=form["fields"])
    assert again.status_code == 400 and "Finish signing in where you started" in again.text

    # The code, typed on the verify-request page of another browser.
    other = requests.Session()
    ask_for_email(other, base, "writer@example.com", f"{base}/")
    _, code = outbox_message(other, base, "writer@example.com")
    verify = other.get(f"{base}/auth/verify-request?provider=email&type=email")
    form = Forms(verify.text).forms["webauth-email-code"]
    signed_in = other.post(
        urljoin(base, form["action"]), data={**form["fields"], "code": code}, allow_redirects=False
    )
    assert signed_in.status_code == 302 and signed_in.headers["Location"] == f"{base}/"
    assert session_of(other, base)["user"]["email"] == "writer@example.com"

    # The console backend printed both messages where the server runs.
    printed = log.read_text()
    assert printed.count("Subject: Sign in to 127.0.0.1:") == 2


# -- "Sign in with Example IdP" on the running example -------------------------------------


def sign_in_with_the_idp(base):
    """The IdP button, the IdP's login form (as idp-alice), back to the site: a session."""
    person = requests.Session()
    csrf = person.get(f"{base}/auth/csrf").json()["csrfToken"]
    to_idp = person.post(
        f"{base}/auth/signin/example-idp",
        data={"csrfToken": csrf, "callbackUrl": f"{base}/private/"},
        allow_redirects=False,
    )
    assert to_idp.status_code == 302, to_idp.text[:500]
    login = person.get(to_idp.headers["Location"])  # the IdP asks its user to log in
    assert "Mismatching redirect URI" not in login.text
    assert login.status_code == 200 and "/idp/login/" in login.url, login.text[:1000]
    fields = Forms(login.text).forms[None]["fields"]
    back = person.post(
        login.url, data={**fields, "username": "idp-alice", "password": "idp-password"}
    )
    assert back.url == f"{base}/private/", back.text[:1000]
    return person


def test_idp_sign_in_lands_on_the_idp_user_from_either_host(env, example_server):
    """One person, one user: the IdP's idp-alice is the site's idp-alice (they share the
    user table), whether the site is opened as 127.0.0.1 or as localhost."""
    base, _ = example_server
    port = base.rsplit(":", 1)[1]
    for site in (base, f"http://localhost:{port}"):
        person = sign_in_with_the_idp(site)
        user = session_of(person, site)["user"]
        assert user["name"] == "Alice Example" and user["email"] == "idp-alice@idp.example"
    code = (
        "from django.contrib.auth import get_user_model; "
        "print(sorted(get_user_model().objects.values_list('username', flat=True)))"
    )
    users = manage("shell", "--no-imports", "-c", code, env={**env, "PORT": port})
    assert users.stdout.strip() == "['demo', 'idp-alice']", users.stdout + users.stderr


def test_setup_moves_an_idp_link_to_the_idp_user(env):
    """A database from an older example, where the IdP sign-in made a second user."""
    for args in (["migrate", "-v", "0"], ["example_setup"]):
        assert manage(*args, env=env).returncode == 0
    code = """
from django.contrib.auth import get_user_model
from webauth.models import Account
User = get_user_model()
alice = User.objects.get(username="idp-alice")
Account.objects.filter(provider="example-idp").delete()
second = User.objects.create(username="idp-alice-12ef3573", first_name="Alice")
Account.objects.create(
    user=second, type="oidc", provider="example-idp", provider_account_id=str(alice.pk)
)
"""
    assert manage("shell", "--no-imports", "-c", code, env=env).returncode == 0
    assert manage("example_setup", env=env).returncode == 0
    code = (
        "from webauth.models import Account; "
        "print([(a.user.username, a.type) for a in Account.objects.filter(provider='example-idp')])"
    )
    linked = manage("shell", "--no-imports", "-c", code, env=env)
    assert linked.stdout.strip() == "[('idp-alice', 'oidc')]", linked.stdout + linked.stderr


# -- passkeys on the running example ------------------------------------------------------


@pytest.mark.browser
def test_passkeys_through_the_example(env, tmp_path):
    """A passkey account on the example, its Passkeys page, and the offer after a password.

    The example names ``localhost`` as its relying party, so it runs (and is opened)
    on localhost, as ./scripts/example does.
    """
    from .support.browser import AUTOFILL_FIELD, VirtualAuthenticators, chromium, watch_credentials

    with running_example(env, tmp_path, "localhost") as (base, _), chromium() as browser:
        context = browser.new_context(base_url=base)
        context.set_default_timeout(15_000)
        watch_credentials(context, autofill="hold")  # a person who ignores autofill
        page = context.new_page()
        VirtualAuthenticators(page).add()

        def session():
            return page.evaluate("() => fetch('/auth/session').then((r) => r.json())")

        # A new account with a passkey, from the built-in sign-in page.
        page.goto("/auth/signin?callbackUrl=/passkeys/")
        page.fill(AUTOFILL_FIELD, "reader@example.com")
        with page.expect_navigation(url="**/passkeys/"):
            page.click("#webauth-passkey-register")
        assert session()["user"]["email"] == "reader@example.com"
        assert page.locator("#passkeys li.passkey").count() == 1

        # Renamed on the Passkeys page; the only one cannot be removed.
        page.get_by_label("Name").fill("My laptop")
        with page.expect_navigation():
            page.get_by_role("button", name="Rename").click()
        assert page.locator(".passkey-name").inner_text() == "My laptop"
        with page.expect_navigation():
            page.get_by_role("button", name="Remove").click()
        assert "only way to sign in" in page.locator(".messages [role=alert]").inner_text()
        assert page.locator("#passkeys li.passkey").count() == 1

        # The demo user signs in with a password: the home page offers a passkey.
        page.goto("/auth/signout")
        with page.expect_navigation():
            page.click("#submitButton")
        page.goto("/auth/signin?callbackUrl=/")
        page.fill("#input-username-for-credentials", "demo")
        page.fill("#input-password-for-credentials", "demo-password")
        with page.expect_navigation():
            page.click("form[data-provider=credentials] button[type=submit]")
        # demo is staff, and the example requires a second factor of staff
        # (WEBAUTH["mfa"]["required"] = "staff"): the first sign-in adds one,
        # its key read off the page as a person types it into an app.
        assert page.url.endswith("/auth/mfa")
        assert session() is None
        key = page.locator("[data-key]").inner_text().replace(" ", "")
        page.fill("#webauth-mfa-code", pyotp.TOTP(key).now())
        with page.expect_navigation():
            page.press("#webauth-mfa-code", "Enter")
        assert page.locator(".webauth-code-list li").count() == 10
        with page.expect_navigation():
            page.click("#webauth-mfa-continue")
        assert session()["user"]["email"] == "demo@example.com"
        offer = page.locator("#passkey-offer #webauth-passkey-register")
        with page.expect_navigation():
            offer.click()
        assert session()["user"]["email"] == "demo@example.com"
        assert offer.count() == 0  # accepted: no more offer
        page.goto("/passkeys/")
        assert page.locator("#passkeys li.passkey").count() == 1
        context.close()
