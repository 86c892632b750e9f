"""The example project starts: system checks pass, it migrates, its setup runs, and
it signs in by email out of the box (its development outbox shows the message).

And what a newcomer sees in it: the language switcher changes webauth's pages,
WEBAUTH_EXAMPLE_SESSIONS=database keeps sessions in the database (and "sign out
everywhere" works), the Example IdP's login page is visibly another site, both
have a favicon, and there is one passkeys page, the account center's."""

import html
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urljoin

import pyotp
import pytest
import requests

from .support.forms import Forms
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


def _env_in(folder):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AUTH_", "DJANGO_"))}
    return {
        **clean,
        "EXAMPLE_DB": str(folder / "example.sqlite3"),
        "EXAMPLE_OUTBOX": str(folder / "outbox.json"),
        "PORT": "8123",
    }


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """A database the example's ``migrate`` made, once for the module: each test
    starts from a copy of it (the migration itself is tested on its own below)."""
    folder = tmp_path_factory.mktemp("example-migrated")
    env = _env_in(folder)
    done = manage("migrate", "-v", "0", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return Path(env["EXAMPLE_DB"])


@pytest.fixture
def fresh_env(tmp_path):
    """The example's environment on a new, empty database."""
    return _env_in(tmp_path)


@pytest.fixture
def env(tmp_path, migrated):
    """The example's environment on a migrated database of the test's own."""
    env = _env_in(tmp_path)
    shutil.copyfile(migrated, env["EXAMPLE_DB"])
    return env


def test_example_project_checks_migrates_and_sets_up(fresh_env):
    env = fresh_env
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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_example(env, tmp_path, host, *, reloader=False):
    """The example project as ./scripts/example runs it: migrated (*env*'s database
    is), set up for its port, served by runserver.

    With *reloader*, runserver's autoreloader runs the site in a child process
    that it restarts on changes, as ./scripts/example does; the outbox must work
    there (it is a file, not the process's memory). Without, one process serves
    (a second start of Django saved where the reloader is not what is tested).
    """
    port = free_port()
    env = {**env, "PORT": str(port)}
    done = manage("example_setup", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    log = open(tmp_path / "runserver.log", "w")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "runserver",
            *([] if reloader else ["--noreload"]),
            f"{host}:{port}",
        ],
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
    """The example running for this test alone."""
    with running_example(env, tmp_path, "127.0.0.1") as running:
        yield running


@pytest.fixture
def reloading_example(env, tmp_path):
    """The example as ./scripts/example serves it, autoreloader on, for this test alone."""
    with running_example(env, tmp_path, "127.0.0.1", reloader=True) as running:
        yield running


@pytest.fixture(scope="module")
def shared_example(migrated, tmp_path_factory):
    """One running example for the tests that only look at its pages (each with its
    own browser), started once for them."""
    folder = tmp_path_factory.mktemp("example-shared")
    env = _env_in(folder)
    shutil.copyfile(migrated, env["EXAMPLE_DB"])
    with running_example(env, folder, "127.0.0.1") as running:
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


def test_email_sign_in_through_the_example(reloading_example):
    base, log = reloading_example
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
    # Used: the same form again, in the browser that used it, says the link is no
    # longer valid (and that this browser is signed in), not a second session.
    again = person.post(urljoin(base, form["action"]), data=form["fields"])
    assert again.status_code == 403 and "The sign-in link is no longer valid." in again.text
    assert 'data-signed-in="true"' in again.text

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


def sign_in_by_code(browser, base, address):
    """An email sign-in with the code from the outbox, typed on the verify-request page."""
    ask_for_email(browser, base, address, f"{base}/")
    _, code = outbox_message(browser, base, address)
    verify = browser.get(f"{base}/auth/verify-request?provider=email&type=email")
    form = Forms(verify.text).forms["webauth-email-code"]
    signed_in = browser.post(
        urljoin(base, form["action"]), data={**form["fields"], "code": code}, allow_redirects=False
    )
    assert signed_in.status_code == 302, signed_in.text[:500]
    assert session_of(browser, base)["user"]["email"] == address


def shell(code, env):
    """What *code* prints in the example's ``manage.py shell``."""
    result = manage("shell", "--no-imports", "-c", code, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


# -- languages ---------------------------------------------------------------------------


def html_lang(page):
    return re.search(r'<html lang="([^"]*)"', page).group(1)


def test_the_language_switcher_changes_webauths_pages(shared_example):
    """The switcher on the example's pages (Django's set_language) sets the language that
    LocaleMiddleware gives every page: webauth's sign-in page is then German."""
    base, _ = shared_example
    person = requests.Session()
    assert html_lang(person.get(f"{base}/auth/signin").text) == "en"
    home = person.get(f"{base}/").text
    assert '<label for="language-switcher">Language</label>' in home
    options = re.findall(r'<option value="([^"]+)" lang="\1"', home)
    assert options == ["en", "de", "fr", "es", "pt-br", "ja", "zh-hans"]
    form = Forms(home).posting_to("/i18n/setlang/")
    assert form["method"] == "post" and form["fields"]["next"] == "/"

    switched = person.post(
        urljoin(base, form["action"]),
        data={**form["fields"], "language": "de", "next": "/auth/signin"},
        allow_redirects=False,
    )
    assert switched.status_code == 302 and switched.headers["Location"] == "/auth/signin"
    signin = person.get(f"{base}/auth/signin").text
    assert html_lang(signin) == "de" and "<title>Anmelden</title>" in signin
    # The example's own page keeps its English, with the choice shown as selected.
    home = person.get(f"{base}/").text
    assert html_lang(home) == "en" and '<option value="de" lang="de" selected>' in home
    # Another browser still gets English.
    assert html_lang(requests.get(f"{base}/auth/signin").text) == "en"


# -- database sessions -------------------------------------------------------------------


def test_database_sessions_switch_and_signing_out_everywhere(env, tmp_path):
    """WEBAUTH_EXAMPLE_SESSIONS=database: a row per session, and the account center's
    "Sign out everywhere else" ends the other browser's session."""
    env = {**env, "WEBAUTH_EXAMPLE_SESSIONS": "database"}
    count = "from webauth.models import Session; print(Session.objects.count())"
    with running_example(env, tmp_path, "127.0.0.1") as (base, _):
        env = {**env, "PORT": base.rsplit(":", 1)[1]}
        laptop, phone = requests.Session(), requests.Session()
        sign_in_by_code(laptop, base, "reader@example.com")
        sign_in_by_code(phone, base, "reader@example.com")
        assert shell(count, env) == "2"

        page = laptop.get(f"{base}/account/sessions/")
        assert page.status_code == 200 and page.text.count("data-session-id=") == 2
        [everywhere] = [f for f in Forms(page.text).all if f["fields"].get("op") == "everywhere"]
        done = laptop.post(
            urljoin(page.url, everywhere["action"] or page.url),
            data=everywhere["fields"],
            headers={"Referer": page.url},
        )
        assert done.status_code == 200, done.text[:1000]
        assert "1 other session was signed out." in done.text

        assert session_of(phone, base) is None  # signed out
        assert session_of(laptop, base)["user"]["email"] == "reader@example.com"
        assert shell(count, env) == "1"
    setup = manage("example_setup", env=env)
    assert "Sessions: in the database (WEBAUTH_EXAMPLE_SESSIONS=database)" in setup.stdout


def test_jwt_sessions_by_default_and_an_unknown_switch_is_refused(env):
    code = "from django.conf import settings; print(settings.WEBAUTH['session']['strategy'])"
    assert shell(code, env) == "jwt"
    assert shell(code, {**env, "WEBAUTH_EXAMPLE_SESSIONS": "database"}) == "database"
    wrong = manage("check", env={**env, "WEBAUTH_EXAMPLE_SESSIONS": "cookies"})
    assert wrong.returncode != 0
    assert "WEBAUTH_EXAMPLE_SESSIONS='cookies': use 'jwt' (the default) or 'database'" in (
        wrong.stderr
    )
    assert manage("migrate", "-v", "0", env=env).returncode == 0
    setup = manage("example_setup", env=env)
    assert "Sessions: JWT cookies; WEBAUTH_EXAMPLE_SESSIONS=database ./scripts/example" in (
        setup.stdout
    )


# -- the Example IdP's own look, the favicons, one passkeys page -------------------------


def icon_of(page):
    return re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page).group(1)


def test_the_idp_looks_like_another_site(shared_example):
    base, _ = shared_example
    site = requests.get(f"{base}/").text
    idp = requests.get(f"{base}/idp/login/?next=/idp/").text
    assert "<title>webauth example</title>" in site
    assert "<title>Log in · Example IdP</title>" in idp and "<h1>Log in to Example IdP</h1>" in idp
    assert icon_of(site) == "/static/exampleproject/favicon.svg"
    assert icon_of(idp) == "/static/exampleproject/idp-favicon.svg"
    # Its own page: neither the site's menu, nor its stylesheet, nor its switcher.
    for part in ('href="/private/"', "webauth.css", "language-switcher"):
        assert part in site and part not in idp, part
    for icon in (icon_of(site), icon_of(idp)):
        served = requests.get(urljoin(base, icon))
        assert served.status_code == 200 and served.headers["Content-Type"] == "image/svg+xml"
        assert served.text.startswith("<svg")
    # webauth's pages name no icon: the browser's /favicon.ico gets the site's.
    fallback = requests.get(f"{base}/favicon.ico", allow_redirects=False)
    assert fallback.headers["Location"] == icon_of(site)


def test_one_passkeys_page_the_account_centers(shared_example):
    base, _ = shared_example
    person = requests.Session()
    old = person.get(f"{base}/passkeys/", allow_redirects=False)
    assert old.status_code == 302 and old.headers["Location"] == "/account/passkeys/"
    sign_in_by_code(person, base, "reader@example.com")
    home = person.get(f"{base}/").text
    assert home.count('href="/account/passkeys/"') == 2  # the menu's and the page's links
    assert 'href="/passkeys/"' not in home
    page = person.get(f"{base}/passkeys/")
    assert page.url == f"{base}/account/passkeys/" and page.status_code == 200
    # The account center's header links the example's home (WEBAUTH["account"]), not
    # Django's default LOGIN_REDIRECT_URL, /accounts/profile/, which is no page here.
    assert "/accounts/profile/" not in page.text
    assert re.search(r'<a class="webauth-account-home" href="/">\s*webauth example', page.text)


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
    assert manage("example_setup", env=env).returncode == 0
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
    """A passkey account on the example, its passkeys page, and the offer after a password.

    The example's one passkeys page is the account center's: its old address,
    /passkeys/, leads there. (Renaming and removing are the account center's own
    tests'.) The example names ``localhost`` as its relying party, so it runs (and
    is opened) on localhost, as ./scripts/example does.
    """
    from .support.browser import (
        VirtualAuthenticators,
        chromium,
        fill_new_account_email,
        watch_credentials,
    )

    with running_example(env, tmp_path, "localhost") as (base, _), chromium() as browser:
        context = browser.new_context(base_url=base)
        context.set_default_timeout(15_000)
        watch_credentials(context, autofill="hold")  # a person who ignores autofill
        page = context.new_page()
        VirtualAuthenticators(page).add()

        def session():
            return page.evaluate("() => fetch('/auth/session').then((r) => r.json())")

        # A new account with a passkey, from the built-in sign-in page, sent back to
        # the old passkeys address: the account center's page lists the passkey.
        page.goto("/auth/signin?callbackUrl=/passkeys/")
        fill_new_account_email(page, "reader@example.com")
        with page.expect_navigation(url="**/account/passkeys/"):
            page.click("#webauth-passkey-register")
        assert session()["user"]["email"] == "reader@example.com"
        assert page.locator("li.webauth-passkey").count() == 1
        # The example's menu links this page.
        page.goto("/")
        assert page.get_by_role("link", name="Passkeys", exact=True).get_attribute("href") == (
            "/account/passkeys/"
        )

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
        page.get_by_role("link", name="Passkeys", exact=True).click()
        page.wait_for_url("**/account/passkeys/")
        assert page.locator("li.webauth-passkey").count() == 1
        context.close()


# -- passwords: sign-up and reset ------------------------------------------------------


def newest_code(browser, base, address):
    """The code of the newest message on /dev/outbox/, which must be to *address*."""
    article = browser.get(f"{base}/dev/outbox/").text.split('<article class="outbox-message"')[1]
    assert f"<dd>{address}</dd>" in article, article[:500]
    [code] = set(re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", article))
    return code


def test_sign_up_and_reset_a_password_through_the_example(shared_example):
    """The example turns the password's life on: the sign-in page links sign-up and
    reset; an account made with an emailed code signs in; a reset by code changes the
    password and the old one no longer works."""
    base, _ = shared_example
    person = requests.Session()
    signin = person.get(f"{base}/auth/signin").text
    assert 'id="webauth-signin-reset"' in signin and 'id="webauth-signin-signup"' in signin

    form = Forms(person.get(f"{base}/auth/signup").text).forms["webauth-signup"]
    first, second = "a first passphrase for quill 81", "a second passphrase for quill 82"
    fields = {"username": "quill", "email": "quill@example.com"}
    sent = person.post(
        urljoin(base, form["action"]),
        data={**form["fields"], **fields, "password1": first, "password2": first},
    )
    assert sent.status_code == 200 and 'id="webauth-signup-code"' in sent.text, sent.text[:800]
    code_form = Forms(sent.text).forms["webauth-signup-code"]
    code = newest_code(person, base, "quill@example.com")
    made = person.post(
        urljoin(base, code_form["action"]),
        data={**code_form["fields"], "code": code},
        allow_redirects=False,
    )
    assert made.status_code == 302, made.text[:500]
    assert session_of(person, base)["user"]["email"] == "quill@example.com"

    other = requests.Session()
    ask = Forms(other.get(f"{base}/auth/reset").text).forms["webauth-reset"]
    asked = other.post(urljoin(base, ask["action"]), data={**ask["fields"], "identifier": "quill"})
    assert asked.status_code == 200 and 'id="webauth-reset-code"' in asked.text, asked.text[:800]
    reset_form = Forms(asked.text).forms["webauth-reset-code"]
    done = other.post(
        urljoin(base, reset_form["action"]),
        data={
            **reset_form["fields"],
            "code": newest_code(other, base, "quill@example.com"),
            "new_password1": second,
            "new_password2": second,
        },
    )
    assert done.status_code == 200 and "Your password has been changed" in done.text
    # The reset ended the session the sign-up made.
    assert session_of(person, base) is None

    def signs_in(password):
        browser = requests.Session()
        csrf = browser.get(f"{base}/auth/csrf").json()["csrfToken"]
        browser.post(
            f"{base}/auth/callback/credentials",
            data={"csrfToken": csrf, "username": "quill", "password": password},
        )
        return bool(session_of(browser, base))

    assert signs_in(second) and not signs_in(first)


# -- API keys ----------------------------------------------------------------------------


def test_a_users_and_a_groups_api_keys_answer_at_api_key_me(env, example_server):
    base, _log = example_server
    made = shell(
        "from django.contrib.auth.models import Group, User\n"
        "from webauth.api_keys import create_key\n"
        "ops = Group.objects.create(name='Ops')\n"
        "ann = User.objects.create_user('ann', 'ann@example.com', 'pw')\n"
        "ann.groups.add(ops)\n"
        "print(create_key(ann, name='mine', scopes=['profile:read']).key)\n"
        "print(create_key(ops, name='deploys', scopes=['profile:read']).key)\n",
        env,
    )
    mine, ours = made.split()
    answer = requests.get(f"{base}/api/key/me/", headers={"Authorization": f"Bearer {mine}"})
    assert answer.json() == {"username": "ann", "key": "mine"}
    answer = requests.get(f"{base}/api/key/me/", headers={"Authorization": f"Bearer {ours}"})
    assert answer.json() == {"group": "Ops", "key": "deploys"}
    # The group's keys are on ann's API keys page (owners_of: her groups).
    assert (
        shell(
            "from django.contrib.auth.models import User\n"
            "from webauth.api_keys import owners_for\n"
            "print([str(o) for _, o in owners_for(User.objects.get(username='ann'))])\n",
            env,
        )
        == "['Ops']"
    )
