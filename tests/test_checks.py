"""System checks (``manage.py check``): each id fires on its mistake and only then."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.checks import Error, Warning, run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.urls import clear_url_caches, include, path, set_script_prefix

from webauth.checks import check_config, check_middleware
from webauth.providers import Credentials, DjangoCredentials
from webauth.providers.oauth import OIDC
from webauth.testing.memory import MemoryAdapter

ROOT = Path(__file__).resolve().parents[1]
SECRET = "test-secret-0123456789abcdef0123456789abcdef"
GOOD = {"secret": SECRET, "providers": ["webauth.providers.DjangoCredentials"]}
MIDDLEWARE = "webauth.middleware.AuthMiddleware"
DJANGO_AUTH = "django.contrib.auth.middleware.AuthenticationMiddleware"

# ROOT_URLCONF for the E005 tests: this module mounts webauth.urls at /api/auth/.
urlpatterns = [path("api/auth/", include("webauth.urls"))]


class NoWebauthUrls:
    urlpatterns: list = []


def webauth_messages():
    # Without the ones the test settings silence (webauth.W006: the suite's LocMemCache).
    return [m for m in run_checks() if (m.id or "").startswith("webauth.") and not m.is_silenced()]


def ids(messages):
    return [m.id for m in messages]


def only(messages, check_id):
    found = [m for m in messages if m.id == check_id]
    assert len(found) == 1, messages
    return found[0]


def test_good_configuration_is_silent():
    assert webauth_messages() == []


def test_manage_py_check_passes(capsys):
    call_command("check")
    assert "no issues" in capsys.readouterr().out


def test_manage_py_check_fails_on_a_webauth_error(settings):
    settings.WEBAUTH = {"providers": [DjangoCredentials()]}
    with pytest.raises(SystemCheckError, match=r"webauth\.E002"):
        call_command("check")


# -- E001: invalid settings ------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "key", "hint"),
    [
        ({**GOOD, "sesion": {}}, "'sesion'", "Did you mean 'session'?"),
        ({**GOOD, "session": {"maxAge": 1}}, "'maxAge'", "Did you mean 'max_age'?"),
        (
            {**GOOD, "callbacks": {"jwt": "tests.nowhere.fn"}},
            "WEBAUTH['callbacks.jwt']",
            "a dotted path to one that imports",
        ),
        ({**GOOD, "debug": "yes"}, "WEBAUTH['debug']", "Use the Python value True or False"),
        ("not a dict", "settings.WEBAUTH", "Set WEBAUTH = {'providers': [...], ...}"),
    ],
)
def test_e001_invalid_settings(settings, raw, key, hint):
    settings.WEBAUTH = raw
    messages = check_config()
    assert ids(messages) == ["webauth.E001"]
    error = messages[0]
    assert isinstance(error, Error)
    assert key in error.msg
    # The hint says what to do about this very problem, and is not repeated in the message.
    assert hint in error.hint and hint not in error.msg
    assert ids(webauth_messages()) == ["webauth.E001"]


@pytest.mark.parametrize(
    ("raw", "guess"),
    [
        ({**GOOD, "sesion": {}}, "Did you mean 'session'?"),
        ({"secret": SECRET, "provider": ["webauth.providers.DjangoCredentials"]}, "'providers'"),
        ({**GOOD, "adaptor": None}, "Did you mean 'adapter'?"),
        ({**GOOD, "trustHost": True}, "Did you mean 'trust_host'?"),
        ({**GOOD, "session": {"maxage": 60}}, "Did you mean 'max_age'?"),
        ({**GOOD, "session": {"strategie": "jwt"}}, "Did you mean 'strategy'?"),
        ({**GOOD, "jwt": {"max-age": 60}}, "Did you mean 'max_age'?"),
        ({**GOOD, "callbacks": {"signin": None}}, "Did you mean 'sign_in'?"),
        ({**GOOD, "pages": {"signIn": "/login/"}}, "Did you mean 'sign_in'?"),
        ({**GOOD, "theme": {"colour_scheme": "dark"}}, "Did you mean 'color_scheme'?"),
        ({**GOOD, "experimental": {"enable_web_authn": True}}, "'enable_webauthn'"),
        ({**GOOD, "trusted_proxies": {"network": ["10.0.0.0/8"]}}, "'networks'"),
        ({**GOOD, "cookies": {"session_token": {"option": {}}}}, "Did you mean 'options'?"),
        ({**GOOD, "cookies": {"session_token": {"options": {"httponly": True}}}}, "'http_only'"),
    ],
)
def test_e001_near_miss_keys_get_a_did_you_mean(settings, raw, guess):
    settings.WEBAUTH = raw
    error = only(check_config(), "webauth.E001")
    assert guess in error.hint
    assert "Allowed keys:" in error.hint


def test_e001_did_you_mean_names_the_key_when_several_are_unknown(settings):
    settings.WEBAUTH = {**GOOD, "sesion": {}, "debgu": True, "zzz": 1}
    error = only(check_config(), "webauth.E001")
    assert "'debgu': did you mean 'debug'?" in error.hint
    assert "'sesion': did you mean 'session'?" in error.hint
    assert "'zzz'" not in error.hint  # nothing close: no guess


def test_e001_a_misspelt_built_in_provider_id_gets_a_guess(settings):
    settings.WEBAUTH = {**GOOD, "providers": ["gihub"]}
    error = only(check_config(), "webauth.E001")
    assert "'gihub' is not a built-in provider id" in error.msg
    assert "Did you mean 'github'?" in error.hint


def test_e004_near_misses_inside_a_provider_get_a_guess(settings):
    from webauth.providers import Passkey

    passkey = Passkey(relying_party={"id": "localhost", "origns": ["http://localhost"]})
    settings.WEBAUTH = {
        **GOOD,
        "providers": [passkey],
        "adapter": MemoryAdapter(),
        "experimental": {"enable_webauthn": True},
    }
    error = only(check_config(), "webauth.E004")
    assert "did you mean 'origins' for 'origns'?" in error.msg
    oidc = OIDC(id="corp", issuer="https://sso.example", client_id="c", checks=["pcke"])
    settings.WEBAUTH = {**GOOD, "providers": [oidc]}
    error = only(check_config(), "webauth.E004")
    assert "did you mean 'pkce' for 'pcke'?" in error.msg


@pytest.mark.parametrize(
    ("raw", "hint"),
    [
        ({**GOOD, "session": {"strategy": "redis"}}, "Use 'jwt' (an encrypted cookie)"),
        ({**GOOD, "session": {"max_age": -1}}, "Give a whole number of seconds"),
        ({**GOOD, "base_path": 5}, "Give a string, or leave the key out."),
        ({**GOOD, "callbacks": {"jwt": 5}}, "Give a function (or a dotted path to one)."),
        ({**GOOD, "theme": {"color_scheme": "blue"}}, "Use 'auto' (follow the browser)"),
        ({**GOOD, "cookies": {"session_token": {"options": {"same_site": "x"}}}}, "'lax'"),
        ({**GOOD, "secret": 5}, "newest first"),
        ({**GOOD, "adapter": "tests.nowhere.Adapter"}, "'webauth.adapters.django.DjangoAdapter'"),
        ({**GOOD, "providers": ["tests.nowhere.Provider"]}, "dotted path of a provider class"),
        ({**GOOD, "providers": [DjangoCredentials(), DjangoCredentials()]}, "id='credentials-2'"),
        ({**GOOD, "rate_limits": {"": "1/m/ip"}}, "Key it by action"),
        ({**GOOD, "jwt": []}, "Give a dict of its options"),
        ({**GOOD, "providers": [Credentials(id="pin")]}, "Credentials(id='pin', ...)"),
    ],
)
def test_every_settings_error_has_a_hint_of_its_own(settings, raw, hint):
    settings.WEBAUTH = raw
    (error,) = [m for m in check_config() if m.is_serious()]
    assert hint in error.hint, error
    assert error.hint not in error.msg
    assert "Fix settings.WEBAUTH" not in error.hint


def test_e001_does_not_prevent_the_middleware_checks(settings):
    settings.WEBAUTH = {"typo": 1}
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != MIDDLEWARE]
    assert sorted(ids(webauth_messages())) == ["webauth.E001", "webauth.E006"]


# -- E002 / W001: the secret --------------------------------------------------------------


def test_e002_no_secret(settings):
    settings.WEBAUTH = {"providers": [DjangoCredentials()]}
    error = only(check_config(), "webauth.E002")
    assert isinstance(error, Error)
    assert "no secret" in error.msg
    assert "WEBAUTH['secret']" in error.hint and "AUTH_SECRET" in error.hint
    assert "secrets.token_urlsafe" in error.hint


def test_the_secret_recipe_is_the_same_in_the_hints_and_the_docs(settings):
    """One way to make a secret everywhere: the E002 and W001 hints and every doc page."""
    import re

    settings.WEBAUTH = {"providers": [DjangoCredentials()]}
    e002 = only(check_config(), "webauth.E002").hint
    settings.WEBAUTH = {**GOOD, "secret": "short"}
    w001 = only(check_config(), "webauth.W001").hint
    recipe = re.compile(r"secrets\.token_urlsafe\(\d*\)")
    in_docs = {
        (path.name, found)
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for found in recipe.findall(path.read_text())
    }
    assert recipe.findall(e002) == recipe.findall(w001) == ["secrets.token_urlsafe(32)"]
    assert in_docs and {found for _, found in in_docs} == {"secrets.token_urlsafe(32)"}, in_docs


def settings_snippets(path):
    """The settings of a Markdown page's ``python`` blocks that set up WEBAUTH's providers."""
    import re

    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), re.DOTALL)
    settings_parts = [re.split(r"^# (?!settings\.py)\w+\.py$", b, flags=re.M)[0] for b in blocks]
    return [p for p in settings_parts if "WEBAUTH = {" in p and '"providers"' in p]


@pytest.mark.parametrize(
    ("page", "count"), [("README.md", 1), ("docs/installation.md", 2)], ids=["readme", "install"]
)
def test_the_quick_starts_leave_a_missing_auth_secret_to_e002(settings, monkeypatch, page, count):
    """Copied into settings.py with AUTH_SECRET unset, the quick start loads (no KeyError)
    and manage.py check says what to do; with it set, the secret is used."""
    for name in ("AUTH_SECRET", "AUTH_SECRET_1", "AUTH_SECRET_2", "AUTH_SECRET_3"):
        monkeypatch.delenv(name, raising=False)
    snippets = settings_snippets(ROOT / page)
    assert len(snippets) == count
    for snippet in snippets:
        namespace: dict = {}
        exec(compile(snippet, page, "exec"), namespace)  # a settings module's import
        settings.WEBAUTH = namespace["WEBAUTH"]
        assert ids(check_config()) == ["webauth.E002"], snippet
    monkeypatch.setenv("AUTH_SECRET", SECRET)
    for snippet in snippets:
        namespace = {}
        exec(compile(snippet, page, "exec"), namespace)
        settings.WEBAUTH = namespace["WEBAUTH"]
        assert check_config() == []


@pytest.mark.parametrize("secret", ["", [], [""]])
def test_e002_empty_secret(settings, secret):
    settings.WEBAUTH = {**GOOD, "secret": secret}
    assert ids(check_config()) == ["webauth.E002"]


def test_e002_satisfied_by_auth_secret(settings, monkeypatch):
    settings.WEBAUTH = {"providers": [DjangoCredentials()]}
    monkeypatch.setenv("AUTH_SECRET", SECRET)
    assert check_config() == []


def test_e002_satisfied_by_a_rotation_secret(settings, monkeypatch):
    settings.WEBAUTH = {"providers": [DjangoCredentials()]}
    monkeypatch.setenv("AUTH_SECRET_1", SECRET)
    assert check_config() == []


def test_w001_short_secret(settings):
    settings.WEBAUTH = {**GOOD, "secret": "short"}
    warning = only(check_config(), "webauth.W001")
    assert isinstance(warning, Warning)
    assert "shorter than 32 characters" in warning.msg
    assert "at least 32 random characters" in warning.hint
    assert "short" not in warning.msg.replace("shorter", "")  # the secret itself is not shown


def test_w001_any_short_secret_in_a_list(settings):
    settings.WEBAUTH = {**GOOD, "secret": [SECRET, "old"]}
    assert ids(check_config()) == ["webauth.W001"]


def test_w001_short_secret_from_the_environment(settings, monkeypatch):
    settings.WEBAUTH = {"providers": [DjangoCredentials()]}
    monkeypatch.setenv("AUTH_SECRET", "tiny")
    assert ids(check_config()) == ["webauth.W001"]


def test_w001_32_characters_is_enough(settings):
    settings.WEBAUTH = {**GOOD, "secret": "x" * 32}
    assert check_config() == []
    settings.WEBAUTH = {**GOOD, "secret": "x" * 31}
    assert ids(check_config()) == ["webauth.W001"]


# -- E003: database strategy without adapter ------------------------------------------------


def test_e003_database_strategy_without_adapter(settings):
    settings.WEBAUTH = {**GOOD, "session": {"strategy": "database"}}
    messages = check_config()
    assert ids(messages) == ["webauth.E003"]
    assert "needs an adapter" in messages[0].msg
    assert "WEBAUTH['adapter']" in messages[0].hint  # the fix
    assert "DjangoAdapter" in messages[0].hint


def test_e003_silent_with_an_adapter(settings):
    settings.WEBAUTH = {
        **GOOD,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "database"},
    }
    assert check_config() == []


# -- E004: providers -------------------------------------------------------------------------


def test_e004_oauth_provider_without_client_id(settings):
    settings.WEBAUTH = {**GOOD, "providers": [OIDC(id="corp", issuer="https://sso.example")]}
    messages = check_config()
    assert ids(messages) == ["webauth.E004", "webauth.E004"]
    text = " ".join(m.msg for m in messages)
    assert "'corp'" in text
    assert "a client id (set client_id=... or AUTH_CORP_ID)" in text
    assert "a client secret (client_secret=... or AUTH_CORP_SECRET)" in text


def test_e004_oauth_provider_without_issuer(settings):
    settings.WEBAUTH = {**GOOD, "providers": [OIDC(id="corp", client_id="c", client_secret="s")]}
    error = only(check_config(), "webauth.E004")
    assert "an issuer (issuer=... or AUTH_CORP_ISSUER)" in error.msg


def test_e004_silent_when_the_environment_supplies_the_client(settings, monkeypatch):
    settings.WEBAUTH = {**GOOD, "providers": [OIDC(id="corp")]}
    monkeypatch.setenv("AUTH_CORP_ID", "cid")
    monkeypatch.setenv("AUTH_CORP_SECRET", "csecret")
    monkeypatch.setenv("AUTH_CORP_ISSUER", "https://sso.example")
    assert check_config() == []


def test_e004_catalog_provider_by_id(settings):
    settings.WEBAUTH = {**GOOD, "providers": ["github"]}
    messages = check_config()
    assert set(ids(messages)) == {"webauth.E004"}
    assert any("AUTH_GITHUB_ID" in m.msg for m in messages)


def test_e004_complete_oauth_provider_is_silent(settings):
    provider = OIDC(id="corp", client_id="c", client_secret="s", issuer="https://sso.example")
    settings.WEBAUTH = {**GOOD, "providers": [provider]}
    assert check_config() == []


def test_e004_credentials_without_authorize(settings):
    settings.WEBAUTH = {**GOOD, "providers": [Credentials(id="pin")]}
    messages = check_config()
    assert ids(messages) == ["webauth.E004"]
    assert "'pin'" in messages[0].msg and "authorize=" in messages[0].msg


def test_e004_credentials_with_a_bad_authorize_path(settings):
    settings.WEBAUTH = {**GOOD, "providers": [Credentials(authorize="tests.nowhere.authorize")]}
    messages = check_config()
    assert ids(messages) == ["webauth.E004"]
    assert "could not import authorize='tests.nowhere.authorize'" in messages[0].msg


# -- E005: base_path vs. the URLconf ----------------------------------------------------------


def test_e005_base_path_does_not_match_the_urlconf(settings):
    settings.WEBAUTH = {**GOOD, "base_path": "/api/auth"}  # tests.support.urls includes it at auth/
    messages = check_config()
    assert ids(messages) == ["webauth.E005"]
    assert "'/auth'" in messages[0].msg and "'/api/auth'" in messages[0].msg
    assert messages[0].hint == (
        "Set WEBAUTH['base_path'] = '/auth' or include webauth.urls at 'api/auth/'."
    )


def test_e005_silent_when_they_match(settings):
    settings.ROOT_URLCONF = "tests.test_checks"
    settings.WEBAUTH = {**GOOD, "base_path": "/api/auth"}
    assert check_config() == []


def test_e005_default_base_path_against_another_mount_point(settings):
    settings.ROOT_URLCONF = "tests.test_checks"
    settings.WEBAUTH = GOOD
    error = only(check_config(), "webauth.E005")
    assert "WEBAUTH['base_path'] = '/api/auth'" in error.hint


def test_e005_base_path_from_auth_url(settings, monkeypatch):
    settings.ROOT_URLCONF = "tests.test_checks"
    settings.WEBAUTH = GOOD
    monkeypatch.setenv("AUTH_URL", "https://app.example.com/api/auth")
    assert check_config() == []


def test_e005_base_path_must_include_the_script_prefix(settings):
    # webauth builds its URLs from base_path, so under FORCE_SCRIPT_NAME="/mounted"
    # it must be the full path: "/mounted/auth".
    settings.WEBAUTH = GOOD
    set_script_prefix("/mounted/")
    try:
        clear_url_caches()
        error = only(check_config(), "webauth.E005")
        assert "served at '/mounted/auth'" in error.msg
        assert "Set WEBAUTH['base_path'] = '/mounted/auth'" in error.hint
        settings.WEBAUTH = {**GOOD, "base_path": "/mounted/auth"}
        assert check_config() == []
    finally:
        set_script_prefix("/")


def test_e005_hint_names_the_url_include_without_a_script_prefix(settings):
    settings.ROOT_URLCONF = "tests.test_checks"
    settings.WEBAUTH = GOOD
    error = only(check_config(), "webauth.E005")
    assert "served at '/api/auth'" in error.msg
    assert "Set WEBAUTH['base_path'] = '/api/auth' or include webauth.urls at 'auth/'" in (
        error.hint
    )


def test_e005_root_base_path(settings):
    settings.WEBAUTH = {**GOOD, "base_path": "/"}
    error = only(check_config(), "webauth.E005")
    assert error.hint == "Set WEBAUTH['base_path'] = '/auth' or include webauth.urls at ''."


def test_e005_silent_when_webauth_urls_are_not_included(settings):
    settings.ROOT_URLCONF = NoWebauthUrls
    settings.WEBAUTH = {**GOOD, "base_path": "/elsewhere"}
    assert check_config() == []


# -- E006 / E007: middleware ------------------------------------------------------------------


def test_e006_middleware_missing(settings):
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != MIDDLEWARE]
    messages = check_middleware()
    assert ids(messages) == ["webauth.E006"]
    assert isinstance(messages[0], Error)
    assert MIDDLEWARE in messages[0].msg
    assert f"Add {MIDDLEWARE!r} to MIDDLEWARE" in messages[0].hint
    assert ids(webauth_messages()) == ["webauth.E006"]


def test_e006_empty_middleware(settings):
    settings.MIDDLEWARE = []
    assert ids(check_middleware()) == ["webauth.E006"]


def test_e007_wrong_order(settings):
    rest = [m for m in settings.MIDDLEWARE if m not in (MIDDLEWARE, DJANGO_AUTH)]
    settings.MIDDLEWARE = [*rest, MIDDLEWARE, DJANGO_AUTH]
    messages = check_middleware()
    assert ids(messages) == ["webauth.E007"]
    assert "overwrite request.user" in messages[0].msg
    assert messages[0].hint == f"Move {MIDDLEWARE!r} after {DJANGO_AUTH!r}."


def test_middleware_without_django_auth_is_fine(settings):
    settings.MIDDLEWARE = [
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
        MIDDLEWARE,
    ]
    assert check_middleware() == []


def test_middleware_in_the_right_order_is_silent():
    assert check_middleware() == []


# -- W004 / W005 --------------------------------------------------------------------------------


def test_w004_base_path_repeats_the_url_path(settings):
    settings.WEBAUTH = {**GOOD, "url": "https://example.com/auth/", "base_path": "/auth"}
    message = only(check_config(), "webauth.W004")
    assert isinstance(message, Warning) and "env-url-basepath-redundant" in message.hint


def test_w004_from_auth_url(settings, monkeypatch):
    monkeypatch.setenv("AUTH_URL", "https://example.com/auth")
    settings.WEBAUTH = {**GOOD, "base_path": "/auth"}
    assert ids(check_config()) == ["webauth.W004"]


def test_w005_url_path_differs_from_base_path(settings):
    settings.WEBAUTH = {**GOOD, "url": "https://example.com/api/auth", "base_path": "/auth"}
    message = only(check_config(), "webauth.W005")
    assert "/api/auth" in message.msg and "ignores" in message.msg
    assert "env-url-basepath-mismatch" in message.hint


@pytest.mark.parametrize(
    "extra",
    [
        {"url": "https://example.com/auth"},  # the URL's path is the base path
        {"url": "https://example.com", "base_path": "/auth"},  # no path to disagree with
        {"base_path": "/auth"},
    ],
)
def test_no_url_path_warning_when_nothing_disagrees(settings, extra):
    settings.WEBAUTH = {**GOOD, **extra}
    assert [m for m in ids(check_config()) if m in ("webauth.W004", "webauth.W005")] == []


# -- W002 / W003 --------------------------------------------------------------------------------


@pytest.mark.parametrize("providers", [[], None])
def test_w002_no_providers(settings, providers):
    settings.WEBAUTH = {"secret": SECRET, "providers": providers}
    messages = check_config()
    assert ids(messages) == ["webauth.W002"]
    assert isinstance(messages[0], Warning)
    assert "nobody can sign in" in messages[0].msg
    assert "DjangoCredentials()" in messages[0].hint


def test_w003_skip_csrf_check(settings):
    settings.WEBAUTH = {**GOOD, "skip_csrf_check": True}
    messages = check_config()
    assert ids(messages) == ["webauth.W003"]
    assert isinstance(messages[0], Warning)
    assert "forged POSTs" in messages[0].msg
    assert "another layer checks CSRF" in messages[0].hint


# -- E008: adapter methods ------------------------------------------------------------------------


class SessionlessAdapter:
    def get_user(self, id):
        return None


def test_e008_adapter_lacks_database_session_methods(settings):
    settings.WEBAUTH = {**GOOD, "adapter": SessionlessAdapter()}
    messages = check_config()
    assert ids(messages) == ["webauth.E008"]
    assert "SessionlessAdapter" in messages[0].msg
    for method in ("create_session", "get_session_and_user", "update_session", "delete_session"):
        assert method in messages[0].msg
    assert "'database' session strategy" in messages[0].msg
    assert "webauth.adapters.base.Adapter" in messages[0].hint


def test_e008_silent_for_a_jwt_strategy_that_only_needs_get_user(settings):
    settings.WEBAUTH = {**GOOD, "adapter": SessionlessAdapter(), "session": {"strategy": "jwt"}}
    assert check_config() == []


def test_e008_silent_for_a_complete_adapter(settings):
    settings.WEBAUTH = {**GOOD, "adapter": MemoryAdapter()}
    assert check_config() == []


def test_e008_the_second_factor_needs_its_adapter_methods(settings):
    jwt_only = {**GOOD, "session": {"strategy": "jwt"}, "mfa": {"enabled": True}}
    settings.WEBAUTH = {**jwt_only, "adapter": SessionlessAdapter()}
    [message] = check_config()
    assert message.id == "webauth.E008"
    assert "the second factor (WEBAUTH['mfa'])" in message.msg
    assert "use_totp_step" in message.msg and "use_recovery_code" in message.msg
    settings.WEBAUTH = {**jwt_only, "adapter": MemoryAdapter()}
    assert check_config() == []
    settings.WEBAUTH = {key: value for key, value in jwt_only.items() if key != "adapter"}
    [message] = check_config()
    assert message.id == "webauth.E008" and "WEBAUTH['mfa'] is enabled" in message.msg


def test_e008_security_keys_need_single_use_challenges(settings):
    class NoChallenges(MemoryAdapter):
        create_webauthn_challenge = None
        use_webauthn_challenge = None

    jwt_only = {**GOOD, "session": {"strategy": "jwt"}, "mfa": {"enabled": True}}
    settings.WEBAUTH = {**jwt_only, "adapter": NoChallenges()}
    [message] = check_config()
    assert message.id == "webauth.E008"
    assert "security keys (mfa.security_keys" in message.msg
    assert "create_webauthn_challenge" in message.msg
    settings.WEBAUTH = {
        **jwt_only,
        "adapter": NoChallenges(),
        "mfa": {"enabled": True, "security_keys": False},
    }
    assert check_config() == []


# -- several at once ----------------------------------------------------------------------


def test_independent_problems_are_all_reported(settings):
    settings.WEBAUTH = {"secret": "short", "providers": [], "skip_csrf_check": True}
    settings.MIDDLEWARE = []
    assert sorted(ids(webauth_messages())) == [
        "webauth.E006",
        "webauth.W001",
        "webauth.W002",
        "webauth.W003",
    ]


# -- W011: the request context processor ---------------------------------------------------


def templates_without_request(settings):
    engine = {**settings.TEMPLATES[0]}
    processors = engine["OPTIONS"]["context_processors"]
    engine["OPTIONS"] = {
        **engine["OPTIONS"],
        "context_processors": [p for p in processors if not p.endswith(".request")],
    }
    return [engine]


def test_w011_request_context_processor_missing(settings):
    settings.TEMPLATES = templates_without_request(settings)
    warning = only(webauth_messages(), "webauth.W011")
    assert isinstance(warning, Warning)
    assert "'django.template.context_processors.request'" in warning.msg
    assert "{% webauth_signin_buttons %}" in warning.msg
    assert "TEMPLATES[...]['OPTIONS']['context_processors']" in warning.hint


def test_w011_one_django_templates_engine_with_it_will_do(settings):
    other = {"BACKEND": "django.template.backends.dummy.TemplateStrings", "DIRS": [], "OPTIONS": {}}
    settings.TEMPLATES = [other, *settings.TEMPLATES]
    assert webauth_messages() == []
    settings.TEMPLATES = [other]  # no DjangoTemplates engine at all: nothing renders the pages
    assert ids(webauth_messages()) == ["webauth.W011"]


def test_w011_silent_when_every_page_is_the_projects_own(settings):
    settings.TEMPLATES = templates_without_request(settings)
    pages = {"sign_in": "/login/", "sign_out": "/logout/", "error": "/oops/"}
    settings.WEBAUTH = {**GOOD, "pages": pages}
    assert ids(webauth_messages()) == ["webauth.W011"]  # the verify-request page is built in
    settings.WEBAUTH = {**GOOD, "pages": {**pages, "verify_request": "/check-mail/"}}
    assert webauth_messages() == []


def test_w011_passkeys_need_it_even_with_the_projects_own_pages(settings):
    from webauth.providers import Passkey

    settings.TEMPLATES = templates_without_request(settings)
    own = {"sign_in": "/login/", "sign_out": "/logout/", "error": "/e/", "verify_request": "/v/"}
    settings.WEBAUTH = {
        **GOOD,
        "pages": own,
        "adapter": MemoryAdapter(),
        "providers": [Passkey(relying_party={"id": "localhost"})],
        "experimental": {"enable_webauthn": True},
    }
    assert "webauth.W011" in ids(webauth_messages())


# -- "webauth" missing from INSTALLED_APPS ------------------------------------------------
# Django runs the checks of installed apps only, so this is said by webauth.urls
# (which manage.py check imports) and AuthMiddleware (built when the server starts).

NOT_INSTALLED = 'Add "webauth" to INSTALLED_APPS'


def without_the_app(*args):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.support.settings_not_installed"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_manage_py_check_fails_when_webauth_is_not_installed():
    result = without_the_app("-m", "django", "check")
    assert result.returncode != 0
    assert "ImproperlyConfigured: webauth.urls is used but" in result.stderr
    assert NOT_INSTALLED in result.stderr
    assert "app_label" not in result.stderr


def test_the_server_does_not_start_when_webauth_is_not_installed():
    # What runserver, gunicorn and the test client do first: build the middleware.
    code = (
        "import django; django.setup()\n"
        "from django.core.handlers.wsgi import WSGIHandler; WSGIHandler()"
    )
    result = without_the_app("-c", code)
    assert result.returncode != 0
    assert "webauth.middleware.AuthMiddleware is used but" in result.stderr
    assert NOT_INSTALLED in result.stderr


# -- webauth.W013: theme contrast ----------------------------------------------------------


@pytest.mark.parametrize(
    "theme",
    [
        {},  # webauth's own colours
        {"brand_color": "#0b6e4f"},  # the docs' example: 6.4:1 with white, both ways
        {"brand_color": "rgb(11, 110, 79)", "button_text": "#FFF"},
        {"brand_color": "#ffd400", "button_text": "#111", "color_scheme": "dark"},
        {"brand_color": "teal"},  # a name is not judged
        {"brand_color": "#a0c4ff80"},  # nor a translucent colour
    ],
)
def test_w013_silent_for_colours_that_pass_or_cannot_be_judged(settings, theme):
    settings.WEBAUTH = {**GOOD, "theme": theme}
    assert "webauth.W013" not in ids(webauth_messages())


def test_w013_a_light_brand_colour_fails_for_labels_and_links(settings):
    settings.WEBAUTH = {**GOOD, "theme": {"brand_color": "#a0c4ff"}}
    labels, links = [m for m in webauth_messages() if m.id == "webauth.W013"]
    assert isinstance(labels, Warning)
    assert "'#fff' on theme.brand_color '#a0c4ff'" in labels.msg and "1.77:1" in labels.msg
    assert "'#a0c4ff' on white" in links.msg and "link colour" in links.msg
    assert "4.5:1" in labels.hint


def test_w013_button_text_alone_is_checked_against_the_default_brand(settings):
    settings.WEBAUTH = {**GOOD, "theme": {"button_text": "rgb(120, 150, 255)"}}
    message = only(webauth_messages(), "webauth.W013")
    assert "'rgb(120, 150, 255)' on theme.brand_color '#346df1'" in message.msg


def test_w013_a_dark_only_theme_does_not_judge_links_on_white(settings):
    settings.WEBAUTH = {
        **GOOD,
        "theme": {"brand_color": "#ffd400", "button_text": "#fff", "color_scheme": "dark"},
    }
    message = only(webauth_messages(), "webauth.W013")
    assert "button labels" in message.msg


def test_the_contrast_ratio_is_wcags():
    from webauth.colors import contrast_ratio, css_rgb

    # Known values: black on white, and #767676, the lightest grey that passes on white.
    assert round(contrast_ratio((0, 0, 0), (255, 255, 255)), 2) == 21.0
    assert round(contrast_ratio((0x76, 0x76, 0x76), (255, 255, 255)), 2) == 4.54
    assert round(contrast_ratio((0x77, 0x77, 0x77), (255, 255, 255)), 2) == 4.48
    # The CSS forms that are judged, and those that are not.
    assert css_rgb("#FFF") == css_rgb("#ffffff") == css_rgb("rgb(255 255 255)") == (255,) * 3
    assert css_rgb("rgba(11, 110, 79, 1)") == css_rgb("#0b6e4fff") == (11, 110, 79)
    for unjudged in ("teal", "hsl(0 0% 0%)", "#0b6e4f80", "rgb(0 0 0 / 50%)", "rgb(300 0 0)"):
        assert css_rgb(unjudged) is None, unjudged


def test_w013_a_providers_own_style_is_judged(settings):
    provider = OIDC(
        id="corp",
        name="Corp",
        issuer="https://idp.example.com",
        client_id="id",
        client_secret="secret",
        style={"bg": "#ffd400"},  # white label (the theme's default) on yellow
    )
    settings.WEBAUTH = {**GOOD, "providers": [provider]}
    message = only(webauth_messages(), "webauth.W013")
    assert message.obj == "corp" and "'#fff' on '#ffd400'" in message.msg
