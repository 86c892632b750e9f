"""``settings.WEBAUTH`` -> the frozen ``Config`` (spec 2.10) and the environment defaults."""

import dataclasses
import logging

import pytest
import requests
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from webauth.conf import (
    Config,
    ConfigError,
    CookieOverride,
    JWTOptions,
    PagesOptions,
    SessionOptions,
    Theme,
    build_config,
    get_config,
    set_env_defaults,
)
from webauth.logger import AuthLogger
from webauth.providers import Credentials, DjangoCredentials, Provider
from webauth.providers.oauth import OIDC
from webauth.testing.memory import MemoryAdapter

SECRET = "test-secret-0123456789abcdef0123456789abcdef"


def no_env(name):
    return None


def env_of(**values):
    return values.get


# Targets for dotted paths.
def token_generator():
    return "generated-token"


def jwt_encode(**kw):
    return "encoded"


def jwt_decode(**kw):
    return {"sub": "1"}


def cb_jwt(**kw):
    return kw["token"]


def cb_session(**kw):
    return kw["session"]


def cb_sign_in(**kw):
    return True


def cb_redirect(*, url, base_url):
    return base_url


def on_sign_in(**kw):
    pass


def on_sign_out(**kw):
    pass


def log_error(error):
    pass


def log_warn(code):
    pass


def log_debug(message, metadata=None):
    pass


def http_client():
    return requests.Session()


NOT_CALLABLE = 42


class PlainProvider(Provider):
    type = "custom"
    default_id = "plain"
    default_name = "Plain"


class OtherProvider(PlainProvider):
    default_id = "other"


# -- every option of spec 2.10 ------------------------------------------------------


def test_every_option_is_accepted_and_read():
    adapter = MemoryAdapter()
    provider = DjangoCredentials()
    raw = {
        "providers": [provider],
        "adapter": adapter,
        "base_path": "/api/auth/",
        "secret": ["new-" + SECRET, "old-" + SECRET],
        "session": {
            "strategy": "jwt",
            "max_age": 3600,
            "update_age": 60,
            "generate_session_token": token_generator,
        },
        "jwt": {"max_age": 1800, "encode": jwt_encode, "decode": jwt_decode},
        "callbacks": {
            "jwt": cb_jwt,
            "session": cb_session,
            "sign_in": cb_sign_in,
            "redirect": cb_redirect,
        },
        "events": {"sign_in": on_sign_in, "sign_out": on_sign_out},
        "cookies": {
            "session_token": {
                "name": "my.session",
                "options": {"same_site": "strict", "domain": "example.com"},
            }
        },
        "pages": {
            "sign_in": "/login/",
            "sign_out": "/logout/",
            "error": "/oops/",
            "verify_request": "/check-mail/",
            "new_user": "/welcome/",
        },
        "debug": True,
        "logger": {"error": log_error, "warn": log_warn, "debug": log_debug},
        "experimental": {"enable_webauthn": True},
        "trust_host": False,
        "use_secure_cookies": True,
        "redirect_proxy_url": "https://proxy.example.com/auth",
        "skip_csrf_check": True,
        "theme": {
            "color_scheme": "dark",
            "logo": "/static/logo.svg",
            "brand_color": "#123456",
            "button_text": "#ffffff",
        },
        "http_client": http_client,
    }
    config = build_config(raw, no_env)

    assert config.providers == (provider,)
    assert config.get_provider("credentials") is provider
    assert config.get_provider("nope") is None and config.get_provider(None) is None
    assert config.adapter is adapter
    assert config.base_path == "/api/auth"  # trailing slash dropped
    assert config.secret == ("new-" + SECRET, "old-" + SECRET)
    assert config.csrf_secret == f"new-{SECRET},old-{SECRET}"  # Auth.js joins arrays
    assert config.session == SessionOptions(
        strategy="jwt", max_age=3600, update_age=60, generate_session_token=token_generator
    )
    assert config.jwt == JWTOptions(max_age=1800, encode=jwt_encode, decode=jwt_decode)
    assert config.callbacks.jwt is cb_jwt
    assert config.callbacks.session is cb_session
    assert config.callbacks.sign_in is cb_sign_in
    assert config.callbacks.redirect is cb_redirect
    assert dict(config.events) == {"sign_in": on_sign_in, "sign_out": on_sign_out}
    assert config.cookies == {
        "session_token": CookieOverride(
            name="my.session", options={"same_site": "strict", "domain": "example.com"}
        )
    }
    assert config.pages == PagesOptions(
        sign_in="/login/",
        sign_out="/logout/",
        error="/oops/",
        verify_request="/check-mail/",
        new_user="/welcome/",
    )
    assert config.debug is True
    assert isinstance(config.logger, AuthLogger) and config.logger.debug_enabled
    assert dict(config.experimental) == {"enable_webauthn": True}
    assert config.trust_host is False
    assert config.use_secure_cookies is True
    assert config.redirect_proxy_url == "https://proxy.example.com/auth"
    assert config.skip_csrf_check is True
    assert config.theme == Theme(
        color_scheme="dark", logo="/static/logo.svg", brand_color="#123456", button_text="#ffffff"
    )
    assert config.http_client is http_client
    assert isinstance(config.http_client(), requests.Session)


def test_defaults():
    config = build_config({}, no_env)
    assert config.providers == ()
    assert config.adapter is None
    assert config.base_path == "/auth"
    assert config.secret == ()
    assert config.session == SessionOptions(
        strategy="jwt", max_age=2592000, update_age=86400, generate_session_token=None
    )
    assert config.jwt == JWTOptions(max_age=2592000, encode=None, decode=None)
    assert config.callbacks.jwt is None and config.callbacks.sign_in is None
    assert dict(config.events) == {} and dict(config.cookies) == {}
    assert config.pages == PagesOptions()
    assert config.debug is False and config.logger.debug_enabled is False
    assert dict(config.experimental) == {"enable_webauthn": False}
    assert config.trust_host is True
    assert config.use_secure_cookies is None  # decided per request from the scheme
    assert config.redirect_proxy_url is None
    assert config.skip_csrf_check is False
    assert config.theme == Theme(color_scheme="auto", logo="", brand_color="", button_text="")
    assert config.http_client is None
    assert config.url is None and config.url_origin is None


def test_none_settings_is_the_default_config():
    assert build_config(None, no_env).base_path == "/auth"


def test_jwt_max_age_defaults_to_session_max_age():
    config = build_config({"session": {"max_age": 600}}, no_env)
    assert config.jwt.max_age == 600


def test_update_age_zero_is_allowed():
    assert build_config({"session": {"update_age": 0}}, no_env).session.update_age == 0


def test_adapter_makes_database_the_default_strategy():
    adapter = MemoryAdapter()
    assert build_config({"adapter": adapter}, no_env).session.strategy == "database"
    forced = build_config({"adapter": adapter, "session": {"strategy": "jwt"}}, no_env)
    assert forced.session.strategy == "jwt"


def test_adapter_as_dotted_path_to_class_is_instantiated():
    config = build_config({"adapter": "webauth.testing.memory.MemoryAdapter"}, no_env)
    assert isinstance(config.adapter, MemoryAdapter)
    assert config.session.strategy == "database"


def test_single_secret_string_becomes_a_tuple():
    assert build_config({"secret": SECRET}, no_env).secret == (SECRET,)


def test_empty_secrets_are_dropped():
    assert build_config({"secret": ["", SECRET]}, no_env).secret == (SECRET,)
    assert build_config({"secret": ""}, no_env).secret == ()


@pytest.mark.parametrize("path", ["/", "//"])
def test_base_path_at_the_root(path):
    assert build_config({"base_path": path}, no_env).base_path == ""


# -- frozen -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attribute", "value"),
    [("secret", ("x",)), ("debug", True), ("base_path", "/x"), ("providers", ())],
)
def test_config_is_frozen(attribute, value):
    config = build_config({"secret": SECRET}, no_env)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, attribute, value)


@pytest.mark.parametrize(
    ("group", "attribute"),
    [
        ("session", "max_age"),
        ("jwt", "encode"),
        ("callbacks", "jwt"),
        ("pages", "sign_in"),
        ("theme", "logo"),
    ],
)
def test_option_groups_are_frozen(group, attribute):
    config = build_config({}, no_env)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(getattr(config, group), attribute, None)


@pytest.mark.parametrize("attribute", ["events", "cookies", "experimental"])
def test_mappings_of_the_config_are_read_only(attribute):
    config = build_config(
        {"events": {"sign_in": on_sign_in}, "cookies": {"state": {"name": "s"}}}, no_env
    )
    with pytest.raises(TypeError):
        getattr(config, attribute)["sign_out"] = on_sign_out


def test_config_does_not_keep_a_reference_to_the_settings_dicts():
    events = {"sign_in": on_sign_in}
    config = build_config({"events": events}, no_env)
    events["sign_out"] = on_sign_out
    assert "sign_out" not in config.events


# -- callables as objects and dotted paths --------------------------------------------


def test_callables_as_dotted_paths():
    here = "tests.test_conf."
    config = build_config(
        {
            "session": {"generate_session_token": here + "token_generator"},
            "jwt": {"encode": here + "jwt_encode", "decode": here + "jwt_decode"},
            "callbacks": {
                "jwt": here + "cb_jwt",
                "session": here + "cb_session",
                "sign_in": here + "cb_sign_in",
                "redirect": here + "cb_redirect",
            },
            "events": {"sign_in": here + "on_sign_in"},
            "logger": {"error": here + "log_error", "warn": here + "log_warn"},
            "http_client": "requests.Session",
        },
        no_env,
    )
    assert config.session.generate_session_token is token_generator
    assert config.jwt.encode is jwt_encode and config.jwt.decode is jwt_decode
    assert config.callbacks.jwt is cb_jwt
    assert config.callbacks.session is cb_session
    assert config.callbacks.sign_in is cb_sign_in
    assert config.callbacks.redirect is cb_redirect
    assert config.events["sign_in"] is on_sign_in
    assert config.http_client is requests.Session


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"callbacks": {"jwt": "tests.test_conf.missing"}}, "callbacks.jwt"),
        ({"callbacks": {"sign_in": "no_such_module.fn"}}, "callbacks.sign_in"),
        ({"events": {"sign_out": "tests.test_conf.nope"}}, "events.sign_out"),
        ({"session": {"generate_session_token": "nodots"}}, "session.generate_session_token"),
        ({"jwt": {"decode": "tests.nowhere.decode"}}, "jwt.decode"),
        ({"logger": {"debug": "tests.test_conf.missing"}}, "logger.debug"),
        ({"http_client": "requests.NoSuchSession"}, "http_client"),
        ({"adapter": "webauth.testing.memory.Missing"}, "adapter"),
        ({"providers": ["tests.test_conf.NoProvider"]}, "providers[0]"),
    ],
)
def test_bad_dotted_path_names_the_key(raw, key):
    with pytest.raises(ImproperlyConfigured) as info:
        build_config(raw, no_env)
    message = str(info.value)
    assert f"WEBAUTH[{key!r}]" in message
    assert "could not import" in message
    assert info.value.check_id == "webauth.E001"


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"callbacks": {"jwt": 42}}, "callbacks.jwt"),
        ({"callbacks": {"redirect": "tests.test_conf.NOT_CALLABLE"}}, "callbacks.redirect"),
        ({"events": {"sign_in": "not callable"}}, "events.sign_in"),
        ({"http_client": 3}, "http_client"),
    ],
)
def test_non_callable_is_rejected(raw, key):
    with pytest.raises(ConfigError, match=r"must be callable|could not import") as info:
        build_config(raw, no_env)
    assert f"WEBAUTH[{key!r}]" in str(info.value)


# -- providers ------------------------------------------------------------------------


def test_providers_as_instance_class_dotted_path_and_catalog_id():
    config = build_config(
        {
            "providers": [
                PlainProvider(),
                DjangoCredentials,
                "tests.test_conf.OtherProvider",
                "github",
            ]
        },
        no_env,
    )
    assert [type(p).__name__ for p in config.providers] == [
        "PlainProvider",
        "DjangoCredentials",
        "OtherProvider",
        "GitHub",
    ]
    assert [p.id for p in config.providers] == ["plain", "credentials", "other", "github"]
    assert config.get_provider("other").name == "Plain"


def test_duplicate_provider_ids_are_rejected():
    with pytest.raises(ConfigError) as info:
        build_config({"providers": [PlainProvider(), "tests.test_conf.PlainProvider"]}, no_env)
    message = str(info.value)
    assert "WEBAUTH['providers']" in message
    assert "two providers with id 'plain'" in message and "id=" in message


def test_credentials_without_authorize_is_rejected_as_e004():
    with pytest.raises(ConfigError) as info:
        build_config({"providers": [Credentials()]}, no_env)
    assert "authorize" in str(info.value)
    assert info.value.check_id == "webauth.E004"


def test_provider_id_must_be_url_safe():
    with pytest.raises(ConfigError, match="letters, digits"):
        build_config({"providers": [PlainProvider(id="a b")]}, no_env)


@pytest.mark.parametrize(
    ("providers", "key", "fix"),
    [
        ("credentials", "providers", "[Provider(), ...]"),
        ([42], "providers[0]", "DjangoCredentials()"),
        (["not-a-provider"], "providers[0]", "docs/providers.md"),
        (["tests.test_conf.on_sign_in"], "providers[0]", "must be a webauth provider"),
    ],
)
def test_bad_providers(providers, key, fix):
    with pytest.raises(ConfigError) as info:
        build_config({"providers": providers}, no_env)
    assert f"WEBAUTH[{key!r}]" in str(info.value)
    assert fix in str(info.value)


# -- unknown keys ----------------------------------------------------------------------


def test_unknown_top_level_key_names_the_key_and_the_fix():
    with pytest.raises(ImproperlyConfigured) as info:
        build_config({"sesion": {}}, no_env)
    message = str(info.value)
    assert "'sesion'" in message
    assert "unknown key" in message
    assert "Allowed keys:" in message and "session" in message
    assert "WEBAUTH['WEBAUTH']" not in message


@pytest.mark.parametrize(
    ("raw", "where", "unknown", "suggestion"),
    [
        ({"basePath": "/x"}, "WEBAUTH", "basePath", "base_path"),
        ({"trustHost": True}, "WEBAUTH", "trustHost", "trust_host"),
        ({"skipCSRFCheck": True}, "WEBAUTH", "skipCSRFCheck", "skip_csrf_check"),
        ({"customFetch": http_client}, "WEBAUTH", "customFetch", "http_client"),
        ({"session": {"maxAge": 10}}, "session", "maxAge", "max_age"),
        ({"session": {"updateAge": 10}}, "session", "updateAge", "update_age"),
        ({"jwt": {"maxAge": 10}}, "jwt", "maxAge", "max_age"),
        ({"callbacks": {"signIn": cb_sign_in}}, "callbacks", "signIn", "sign_in"),
        ({"events": {"signOut": on_sign_out}}, "events", "signOut", "sign_out"),
        ({"pages": {"verifyRequest": "/v"}}, "pages", "verifyRequest", "verify_request"),
        ({"logger": {"info": log_debug}}, "logger", "info", None),
        (
            {"experimental": {"enableWebAuthn": True}},
            "experimental",
            "enableWebAuthn",
            "enable_webauthn",
        ),
        ({"theme": {"colorScheme": "dark"}}, "theme", "colorScheme", "color_scheme"),
        ({"cookies": {"sessionToken": {}}}, "cookies", "sessionToken", "session_token"),
        ({"cookies": {"state": {"nam": "x"}}}, "cookies.state", "nam", None),
        (
            {"cookies": {"state": {"options": {"sameSite": "lax"}}}},
            "cookies.state.options",
            "sameSite",
            "same_site",
        ),
    ],
)
def test_unknown_nested_key_names_the_key_and_the_fix(raw, where, unknown, suggestion):
    with pytest.raises(ConfigError) as info:
        build_config(raw, no_env)
    message = str(info.value)
    if where != "WEBAUTH":
        assert f"WEBAUTH[{where!r}]" in message
    assert repr(unknown) in message
    assert "Allowed keys:" in message
    if suggestion:
        assert f"Did you mean {suggestion!r}?" in message
    assert info.value.check_id == "webauth.E001"


@pytest.mark.parametrize("raw", ["not a dict", ["secret"], 42])
def test_webauth_setting_must_be_a_dict(raw):
    with pytest.raises(ImproperlyConfigured, match="must be a dict"):
        build_config(raw, no_env)


# -- wrong types and impossible combinations ----------------------------------------------


@pytest.mark.parametrize(
    ("raw", "key", "expected"),
    [
        ({"secret": 123}, "secret", "string or a list of strings"),
        ({"secret": ["ok", 5]}, "secret", "string or a list of strings"),
        ({"base_path": "auth"}, "base_path", "must start with '/'"),
        ({"base_path": 5}, "base_path", "must be a string"),
        ({"session": "jwt"}, "session", "must be a dict"),
        ({"session": {"strategy": "cookie"}}, "session", "'jwt' or 'database'"),
        ({"session": {"max_age": "3600"}}, "session.max_age", "number of seconds"),
        ({"session": {"max_age": -1}}, "session.max_age", "non-negative"),
        ({"session": {"update_age": True}}, "session.update_age", "number of seconds"),
        ({"jwt": {"max_age": 1.5}}, "jwt.max_age", "number of seconds"),
        ({"pages": {"sign_in": 5}}, "pages.sign_in", "must be a string"),
        ({"debug": "yes"}, "debug", "True or False"),
        ({"trust_host": "true"}, "trust_host", "True or False"),
        ({"use_secure_cookies": 1}, "use_secure_cookies", "True or False"),
        ({"skip_csrf_check": "on"}, "skip_csrf_check", "True or False"),
        (
            {"experimental": {"enable_webauthn": "yes"}},
            "experimental.enable_webauthn",
            "True or False",
        ),
        ({"redirect_proxy_url": 5}, "redirect_proxy_url", "must be a string"),
        ({"theme": {"color_scheme": "blue"}}, "theme", "'auto', 'dark' or 'light'"),
        ({"theme": {"logo": 5}}, "theme.logo", "must be a string"),
        ({"cookies": {"state": {"name": 5}}}, "cookies.state.name", "must be a string"),
        (
            {"cookies": {"state": {"options": {"same_site": "sometimes"}}}},
            "cookies.state.options",
            "lax, strict or none",
        ),
        ({"cookies": []}, "cookies", "must be a dict"),
        ({"url": "example.com"}, "url", "absolute http(s) URL"),
        ({"url": "ftp://example.com"}, "url", "absolute http(s) URL"),
        ({"protected_paths": "/account/"}, "protected_paths", "list of path prefixes"),
        ({"protected_paths": [1]}, "protected_paths", "list of path prefixes"),
    ],
)
def test_wrong_types_name_the_key(raw, key, expected):
    with pytest.raises(ConfigError) as info:
        build_config(raw, no_env)
    assert f"WEBAUTH[{key!r}]" in str(info.value)
    assert expected in str(info.value)


def test_database_strategy_without_adapter_is_impossible():
    with pytest.raises(ConfigError) as info:
        build_config({"session": {"strategy": "database"}}, no_env)
    message = str(info.value)
    assert "WEBAUTH['session']" in message and "needs an adapter" in message
    assert "WEBAUTH['adapter']" in message and "'jwt' strategy" in message  # the fix
    assert info.value.check_id == "webauth.E003"


def test_config_error_is_improperly_configured():
    assert issubclass(ConfigError, ImproperlyConfigured)


# -- warnings at build time ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ({"debug": True}, "debug-enabled"),
        ({"skip_csrf_check": True}, "csrf-disabled"),
        ({"experimental": {"enable_webauthn": True}}, "experimental-webauthn"),
    ],
)
def test_risky_options_warn_when_the_config_is_built(raw, code):
    codes = []
    build_config({**raw, "logger": {"warn": codes.append}}, no_env)
    assert codes == [code]


def test_the_system_checks_warn_once(settings, caplog):
    """``manage.py check`` (and runserver's start) says each start-up warning once.

    The check builds a configuration of its own to validate it; the warnings come
    from the one in use.
    """
    from django.core.management import call_command

    base = {"secret": SECRET, "providers": ["webauth.providers.DjangoCredentials"]}
    # No cause in force first, whatever an earlier test of this process said: the
    # process has said nothing of this warning yet (as a new manage.py check).
    settings.WEBAUTH = base
    get_config()
    settings.WEBAUTH = {**base, "experimental": {"enable_webauthn": True}}
    with caplog.at_level(logging.WARNING, logger="webauth"):
        call_command("check", "--deploy", "--fail-level", "CRITICAL", verbosity=0)
        call_command("check", verbosity=0)
    said = [r.getMessage() for r in caplog.records if "experimental-webauthn" in r.getMessage()]
    assert len(said) == 1, said


def _warned(caplog, code):
    return [r.getMessage() for r in caplog.records if f"[auth][warn][{code}]" in r.getMessage()]


def test_a_process_says_each_start_up_warning_once(settings, caplog):
    """A rebuilt configuration (setting_changed) says only what is new to the process."""
    base = {
        "secret": SECRET,
        "experimental": {"enable_webauthn": True},
        "providers": ["webauth.providers.DjangoCredentials"],
    }
    with caplog.at_level(logging.WARNING, logger="webauth"):
        settings.WEBAUTH = {**base, "experimental": {}}  # whatever was said before: no cause
        get_config()
        settings.WEBAUTH = base
        get_config()
        for colour in ("#111111", "#222222", "#333333"):
            settings.WEBAUTH = {**base, "theme": {"brand_color": colour}}
            assert get_config().theme.brand_color == colour
        assert len(_warned(caplog, "experimental-webauthn")) == 1
        # Its cause gone, then back: said again.
        settings.WEBAUTH = {**base, "experimental": {}}
        get_config()
        settings.WEBAUTH = base
        get_config()
        assert len(_warned(caplog, "experimental-webauthn")) == 2
        # A new cause beside it: only the new one.
        settings.WEBAUTH = {**base, "debug": True}
        get_config()
        assert len(_warned(caplog, "experimental-webauthn")) == 2
        assert len(_warned(caplog, "debug-enabled")) == 1
    # Warnings that go somewhere new (the logger option's warn) are all said there.
    seen = []
    settings.WEBAUTH = {**base, "debug": True, "logger": {"warn": seen.append}}
    get_config()
    settings.WEBAUTH = {**base, "debug": True, "logger": {"warn": seen.append}, "theme": {}}
    get_config()
    assert seen == ["debug-enabled", "experimental-webauthn"]


def test_two_threads_that_build_at_once_say_it_once(settings, caplog, monkeypatch):
    import threading

    import webauth.conf as conf

    settings.WEBAUTH = {"secret": SECRET, "providers": []}
    get_config()  # no cause in force
    settings.WEBAUTH = {"secret": SECRET, "debug": True, "providers": []}
    both_built = threading.Barrier(2)
    real_build = conf.build_config

    def build(*args, **kwargs):
        config = real_build(*args, **kwargs)
        both_built.wait(timeout=10)  # neither publishes before the other has built
        return config

    monkeypatch.setattr(conf, "build_config", build)
    got = []
    with caplog.at_level(logging.WARNING, logger="webauth"):
        threads = [threading.Thread(target=lambda: got.append(get_config())) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
    assert len(got) == 2 and got[0] is got[1] is get_config()
    assert len(_warned(caplog, "debug-enabled")) == 1


#: A project on the test suite's settings whose configuration has a start-up warning.
_PROCESS_SETTINGS = """
from tests.support.settings import *  # noqa: F403

WEBAUTH = {**WEBAUTH, "experimental": {"enable_webauthn": True}}  # noqa: F405
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": %r}}
LOGGING = {"version": 1, "disable_existing_loggers": False}  # Python's last resort: stderr
"""


def _process_env(tmp_path):
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "warnsettings.py").write_text(_PROCESS_SETTINGS % str(tmp_path / "db.sqlite3"))
    env = {k: v for k, v in os.environ.items() if k not in ("RUN_MAIN", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(root)])
    env["DJANGO_SETTINGS_MODULE"] = "warnsettings"
    return env, root


def _assert_one_clickable_warning(output, root):
    lines = [line for line in output.splitlines() if "[auth][warn]" in line]
    doc = (root / "docs" / "errors.md").as_uri()
    assert lines == [
        f"[auth][warn][experimental-webauthn] Read more: {doc}#experimental-webauthn"
    ], output


def test_manage_py_check_says_the_warning_once_with_a_link(tmp_path):
    import subprocess
    import sys

    env, root = _process_env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "django", "check", "--deploy", "--fail-level", "CRITICAL"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-3000:])
    _assert_one_clickable_warning(done.stdout + done.stderr, root)


def test_runserver_says_the_warning_once_with_its_autoreloader(tmp_path):
    # runserver's autoreloader runs the server in a child process; the system
    # checks there build the configuration in use, once.
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    env, root = _process_env(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "django", "runserver", f"127.0.0.1:{port}"],
        env={**env, "PYTHONUNBUFFERED": "1"},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            output.append(line)
            if "Quit the server with" in line:
                break
        # Started: anything said later (a second process) would come now.
        time.sleep(1)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        rest, _ = server.communicate(timeout=30)
    text = "".join(output) + rest
    assert "Quit the server with" in text, text
    _assert_one_clickable_warning(text, root)


def test_no_warning_for_the_default_config():
    codes = []
    build_config({"logger": {"warn": codes.append}}, no_env)
    assert codes == []


# -- get_config and setting_changed -----------------------------------------------------------


def test_get_config_reads_settings_and_is_cached():
    config = get_config()
    assert config.secret == (SECRET,)
    assert [p.id for p in config.providers] == ["credentials"]
    assert get_config() is config


def test_override_settings_rebuilds_the_config():
    before = get_config()
    with override_settings(WEBAUTH={"secret": "other-" + SECRET, "base_path": "/api/auth"}):
        inside = get_config()
        assert inside is not before
        assert inside.secret == ("other-" + SECRET,)
        assert inside.base_path == "/api/auth"
        assert inside.providers == ()
    after = get_config()
    assert after.secret == (SECRET,) and after.base_path == "/auth"


def test_settings_fixture_rebuilds_the_config(settings):
    assert get_config().debug is False
    settings.WEBAUTH = {**settings.WEBAUTH, "debug": True, "pages": {"sign_in": "/login/"}}
    assert get_config().debug is True
    assert get_config().pages.sign_in == "/login/"


def test_other_settings_keep_the_cached_config(settings):
    config = get_config()
    settings.LANGUAGE_CODE = "fr"
    assert get_config() is config


def test_get_config_reads_the_process_environment(settings, monkeypatch):
    settings.WEBAUTH = {"providers": []}
    monkeypatch.setenv("AUTH_SECRET", "from-the-environment-" + SECRET)
    assert get_config().secret == ("from-the-environment-" + SECRET,)


def test_invalid_settings_raise_from_get_config(settings):
    settings.WEBAUTH = {"secrett": SECRET}
    with pytest.raises(ImproperlyConfigured, match="'secrett'"):
        get_config()


# -- environment defaults (Auth.js setEnvDefaults) -------------------------------------------


def test_secret_rotation_order_from_the_environment():
    # Auth.js pushes AUTH_SECRET then unshifts _1, _2, _3: the highest number signs.
    env = env_of(AUTH_SECRET="s0", AUTH_SECRET_1="s1", AUTH_SECRET_2="s2", AUTH_SECRET_3="s3")
    assert build_config({}, env).secret == ("s3", "s2", "s1", "s0")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"AUTH_SECRET": "s0"}, ("s0",)),
        ({"AUTH_SECRET": "s0", "AUTH_SECRET_1": "s1"}, ("s1", "s0")),
        ({"AUTH_SECRET": "s0", "AUTH_SECRET_2": "s2"}, ("s2", "s0")),
        ({"AUTH_SECRET_1": "s1", "AUTH_SECRET_3": "s3"}, ("s3", "s1")),
        ({"AUTH_SECRET": "", "AUTH_SECRET_1": "s1"}, ("s1",)),
        ({}, ()),
    ],
)
def test_missing_rotation_secrets_are_skipped(values, expected):
    assert build_config({}, env_of(**values)).secret == expected


@pytest.mark.parametrize("explicit", ["explicit", ["explicit"]])
def test_explicit_secret_wins_over_the_environment(explicit):
    env = env_of(AUTH_SECRET="env", AUTH_SECRET_1="env1")
    assert build_config({"secret": explicit}, env).secret == ("explicit",)


@pytest.mark.parametrize("empty", ["", [], None])
def test_empty_explicit_secret_falls_back_to_the_environment(empty):
    assert build_config({"secret": empty}, env_of(AUTH_SECRET="env")).secret == ("env",)


def test_set_env_defaults_fills_the_raw_dict_and_returns_nothing():
    raw: dict = {}
    env = env_of(
        AUTH_SECRET="s0",
        AUTH_SECRET_1="s1",
        AUTH_URL="https://app.example.com/api/auth",
        AUTH_REDIRECT_PROXY_URL="https://proxy.example.com/auth",
    )
    assert set_env_defaults(env, raw) is None
    assert raw == {
        "secret": ["s1", "s0"],
        "url": "https://app.example.com/api/auth",
        "base_path": "/api/auth",
        "trust_host": True,
        "redirect_proxy_url": "https://proxy.example.com/auth",
    }


def test_set_env_defaults_keeps_explicit_values():
    raw = {
        "secret": "mine",
        "url": "https://mine.example.com/auth",
        "base_path": "/auth",
        "trust_host": False,
        "redirect_proxy_url": "https://mine.example.com/proxy",
    }
    env = env_of(
        AUTH_SECRET="s0",
        AUTH_URL="https://app.example.com/api/auth",
        AUTH_TRUST_HOST="true",
        AUTH_REDIRECT_PROXY_URL="https://proxy.example.com/auth",
    )
    set_env_defaults(env, raw)
    assert raw == {
        "secret": "mine",
        "url": "https://mine.example.com/auth",
        "base_path": "/auth",
        "trust_host": False,
        "redirect_proxy_url": "https://mine.example.com/proxy",
    }


def test_auth_url_sets_url_and_base_path():
    config = build_config({}, env_of(AUTH_URL="https://app.example.com/api/auth/"))
    assert config.url == "https://app.example.com/api/auth/"
    assert config.url_origin == "https://app.example.com"
    assert config.base_path == "/api/auth"
    assert config.trust_host is True


def test_auth_url_without_path_keeps_the_default_base_path():
    # Auth.js would move every route to "/"; webauth keeps /auth (documented deviation).
    config = build_config({}, env_of(AUTH_URL="https://app.example.com"))
    assert config.base_path == "/auth"
    assert config.url_origin == "https://app.example.com"


def test_explicit_base_path_wins_over_auth_url():
    config = build_config({"base_path": "/auth"}, env_of(AUTH_URL="https://a.example.com/x/y"))
    assert config.base_path == "/auth"
    assert config.url == "https://a.example.com/x/y"


def test_url_setting_wins_over_auth_url():
    config = build_config(
        {"url": "https://mine.example.com/sso"}, env_of(AUTH_URL="https://env.example.com/x")
    )
    assert config.url == "https://mine.example.com/sso"
    assert config.base_path == "/sso"


@pytest.mark.parametrize(
    ("value", "trusted"),
    [
        ("true", True),
        ("1", True),
        ("yes", True),
        ("false", False),
        ("False", False),
        ("FALSE", False),
        ("0", False),
        ("", False),
    ],
)
def test_auth_trust_host(value, trusted):
    assert build_config({}, env_of(AUTH_TRUST_HOST=value)).trust_host is trusted


def test_auth_url_is_consulted_before_auth_trust_host():
    # As Auth.js: the first *defined* of AUTH_URL, AUTH_TRUST_HOST decides.
    env = env_of(AUTH_URL="https://app.example.com/auth", AUTH_TRUST_HOST="false")
    assert build_config({}, env).trust_host is True


def test_explicit_trust_host_wins_over_the_environment():
    assert build_config({"trust_host": True}, env_of(AUTH_TRUST_HOST="false")).trust_host is True
    assert build_config({"trust_host": False}, env_of(AUTH_TRUST_HOST="1")).trust_host is False


def test_trust_host_defaults_to_true_without_environment():
    # Django's ALLOWED_HOSTS already validates the host header.
    assert build_config({}, no_env).trust_host is True


def test_auth_redirect_proxy_url():
    env = env_of(AUTH_REDIRECT_PROXY_URL="https://proxy.example.com/auth")
    assert build_config({}, env).redirect_proxy_url == "https://proxy.example.com/auth"
    explicit = build_config({"redirect_proxy_url": "https://mine.example.com/auth"}, env)
    assert explicit.redirect_proxy_url == "https://mine.example.com/auth"


def test_provider_credentials_from_the_environment():
    provider = OIDC(id="corp-sso")
    env = env_of(
        AUTH_CORP_SSO_ID="cid",
        AUTH_CORP_SSO_SECRET="csecret",
        AUTH_CORP_SSO_ISSUER="https://sso.example.com",
    )
    config = build_config({"providers": [provider]}, env)
    (read,) = config.providers
    assert read.client_id == "cid"
    assert read.client_secret == "csecret"
    assert read.issuer == "https://sso.example.com"


def test_provider_values_given_in_settings_win_over_the_environment():
    provider = OIDC(
        id="corp", client_id="mine", client_secret="my-secret", issuer="https://mine.example"
    )
    env = env_of(AUTH_CORP_ID="env", AUTH_CORP_SECRET="env", AUTH_CORP_ISSUER="https://env")
    (read,) = build_config({"providers": [provider]}, env).providers
    assert (read.client_id, read.client_secret, read.issuer) == (
        "mine",
        "my-secret",
        "https://mine.example",
    )


def test_catalog_provider_by_id_reads_its_environment():
    env = env_of(AUTH_GITHUB_ID="gh-id", AUTH_GITHUB_SECRET="gh-secret")
    (github,) = build_config({"providers": ["github"]}, env).providers
    assert github.id == "github"
    assert (github.client_id, github.client_secret) == ("gh-id", "gh-secret")


def test_provider_id_with_dashes_uses_underscores_in_the_environment():
    env = env_of(
        AUTH_MICROSOFT_ENTRA_ID_ID="entra-id",
        AUTH_MICROSOFT_ENTRA_ID_SECRET="entra-secret",
        AUTH_MICROSOFT_ENTRA_ID_ISSUER="https://login.microsoftonline.com/tenant/v2.0",
    )
    (entra,) = build_config({"providers": ["microsoft-entra-id"]}, env).providers
    assert entra.env_prefix == "AUTH_MICROSOFT_ENTRA_ID"
    assert entra.client_id == "entra-id" and entra.client_secret == "entra-secret"
    assert entra.issuer == "https://login.microsoftonline.com/tenant/v2.0"


def test_provider_without_env_support_is_left_alone():
    provider = PlainProvider()
    config = build_config({"providers": [provider]}, env_of(AUTH_PLAIN_ID="x"))
    assert config.providers == (provider,)
    assert not hasattr(provider, "client_id")


def test_config_dataclass_can_be_built_directly():
    # The error page falls back to Config() when the settings are broken.
    config = Config()
    assert config.base_path == "/auth" and config.get_provider("credentials") is None


def test_credentials_authorize_bad_dotted_path_is_caught_at_start_up():
    with pytest.raises(ConfigError) as info:
        build_config(
            {"providers": [Credentials(id="pin", authorize="tests.test_conf.no_authorize")]},
            no_env,
        )
    message = str(info.value)
    assert "WEBAUTH['providers']" in message
    assert "'pin'" in message and "could not import" in message
    assert "tests.test_conf.no_authorize" in message and "fix the dotted path" in message
    assert info.value.check_id == "webauth.E004"


def test_credentials_authorize_dotted_path_to_a_non_callable():
    with pytest.raises(ConfigError, match="is not callable"):
        build_config({"providers": [Credentials(authorize="tests.test_conf.NOT_CALLABLE")]}, no_env)


def test_credentials_authorize_dotted_path_is_resolved():
    provider = Credentials(authorize="tests.test_conf.cb_sign_in")
    build_config({"providers": [provider]}, no_env)
    assert provider.authorize_function is cb_sign_in


@pytest.mark.parametrize("value", ["example.com/auth", "garbage", "ftp://example.com/auth"])
def test_unusable_auth_url_is_reported_with_its_fix(value):
    with pytest.raises(ConfigError) as info:
        build_config({}, env_of(AUTH_URL=value))
    message = str(info.value)
    assert "WEBAUTH['url']" in message and repr(value) in message
    assert "AUTH_URL" in message and "'https://example.com/auth'" in message
