"""Translations (issue 14): the catalogs under webauth/locale/ and the pages in each language.

The catalogs are checked as files (every message translated, placeholders and
markup kept, the compiled ``.mo`` in step with its ``.po``, the message ids
those ``makemessages`` extracts from the code today), then the built-in pages
and the sign-in email are rendered for a browser that asks for each language
(``Accept-Language`` through Django's ``LocaleMiddleware``).
"""

from __future__ import annotations

import gettext
import html
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import translation
from freezegun import freeze_time

from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.catalog.github import GitHub
from webauth.providers.webauthn import device_name
from webauth.test import force_sign_in

from .support import po
from .support.helpers import csrf_pair

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "webauth"
LOCALE = PACKAGE / "locale"
SECRET = "test-secret-0123456789abcdef0123456789abcdef"

#: Catalog directory -> what a browser in that language sends.
LANGUAGES = {
    "de": "de-DE,de;q=0.9,en;q=0.5",
    "fr": "fr-FR,fr;q=0.9,en;q=0.5",
    "es": "es-ES,es;q=0.9,en;q=0.5",
    "pt_BR": "pt-BR,pt;q=0.9,en;q=0.5",
    "ja": "ja,en-US;q=0.7,en;q=0.3",
    "zh_Hans": "zh-CN,zh;q=0.9,en;q=0.5",
}
#: Catalog directory -> the language code Django activates (and <html lang>).
CODES = {"de": "de", "fr": "fr", "es": "es", "pt_BR": "pt-br", "ja": "ja", "zh_Hans": "zh-hans"}
#: CLDR's plural forms, as Django's own catalogs have them.
NPLURALS = {"de": 2, "fr": 2, "es": 3, "pt_BR": 2, "ja": 1, "zh_Hans": 1}

_PLACEHOLDER = re.compile(r"%\(\w+\)[sdif]|%[sdif]|\{\w*\}")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")


def catalog_path(lang: str, suffix: str = "po") -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"django.{suffix}"


def catalogs() -> dict[str, po.Catalog]:
    return {lang: po.read(catalog_path(lang)) for lang in LANGUAGES}


def placeholders(text: str) -> Counter[str]:
    return Counter(_PLACEHOLDER.findall(text))


def tags(text: str) -> list[str]:
    return _TAG.findall(text)


def require_gettext() -> None:
    """GNU gettext's tools, which makemessages runs; CI installs them (.ci/run)."""
    if shutil.which("xgettext") and shutil.which("msgmerge"):
        return
    # A fresh machine without gettext skips only this comparison (the catalogs
    # themselves are still checked); .ci/run sets WEBAUTH_REQUIRE_GETTEXT=1, so
    # in CI a missing gettext fails instead of hiding the check.
    if os.environ.get("WEBAUTH_REQUIRE_GETTEXT") or os.environ.get("CI"):
        pytest.fail("GNU gettext (xgettext, msgmerge) is missing; .ci/run installs it")
    pytest.skip("GNU gettext (xgettext, msgmerge) is not installed")


# -- the catalogs as files ---------------------------------------------------------------------


def test_the_six_languages_have_a_catalog_each():
    assert sorted(p.name for p in LOCALE.iterdir() if p.is_dir()) == sorted(LANGUAGES)
    for lang in LANGUAGES:
        assert catalog_path(lang).is_file() and catalog_path(lang, "mo").is_file(), lang


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_header_names_the_language_and_its_plurals(lang):
    catalog = po.read(catalog_path(lang))
    assert not catalog.header_fuzzy
    assert catalog.header["Language"] == lang
    assert catalog.header["Content-Type"] == "text/plain; charset=UTF-8"
    plural_forms = catalog.header["Plural-Forms"]
    assert re.match(rf"nplurals={NPLURALS[lang]};", plural_forms), plural_forms


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_message_is_translated(lang):
    catalog = po.read(catalog_path(lang))
    assert catalog.entries
    assert not catalog.obsolete, "run makemessages with --no-obsolete"
    untranslated = [
        e.msgid for e in catalog.entries if e.fuzzy or not all(t.strip() for t in e.translations())
    ]
    assert untranslated == []
    wrong_forms = [
        e.msgid
        for e in catalog.entries
        if e.msgid_plural is not None and len(e.msgstr_plural) != NPLURALS[lang]
    ]
    assert wrong_forms == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_translations_keep_the_placeholders_and_the_markup(lang):
    problems = []
    for e in po.read(catalog_path(lang)).entries:
        if e.msgid_plural is None:
            if placeholders(e.msgstr) != placeholders(e.msgid):
                problems.append(("placeholders", e.msgid, e.msgstr))
        else:
            # A form may leave the number out (a language may say "one minute"),
            # but none may bring a name the code does not fill, and the general
            # (last) form has them all.
            wanted = placeholders(e.msgid_plural)
            forms = e.translations()
            if any(set(placeholders(f)) - set(wanted) for f in forms):
                problems.append(("unknown placeholder", e.msgid, forms))
            if placeholders(forms[-1]) != wanted:
                problems.append(("placeholders", e.msgid, forms[-1]))
        for text in e.translations():
            if sorted(tags(text)) != sorted(tags(e.msgid)):
                problems.append(("markup", e.msgid, text))
    assert problems == []


def test_every_language_translates_the_same_messages():
    keys = {lang: {e.key for e in c.entries} for lang, c in catalogs().items()}
    assert all(k == keys["de"] for k in keys.values()), {
        lang: sorted(k ^ keys["de"]) for lang, k in keys.items()
    }


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_compiled_catalog_is_the_po_file(lang):
    """The committed ``.mo`` holds exactly the ``.po``'s translations (run compilemessages)."""
    with catalog_path(lang, "mo").open("rb") as f:
        compiled = gettext.GNUTranslations(f)
    expected: dict[object, str] = {}
    for e in po.read(catalog_path(lang)).entries:
        msgid = e.msgid if e.msgctxt is None else f"{e.msgctxt}\x04{e.msgid}"
        if e.msgid_plural is None:
            expected[msgid] = e.msgstr
        else:
            for i, form in enumerate(e.translations()):
                expected[(msgid, i)] = form
    found = {k: v for k, v in compiled._catalog.items() if k != ""}  # type: ignore[attr-defined]
    assert found == expected


def test_the_catalogs_have_what_makemessages_extracts_today(tmp_path):
    """A message marked in the code or a template since the catalogs were made fails here."""
    require_gettext()
    copy = tmp_path / "webauth"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("locale", "static", "__pycache__"))
    (copy / "locale").mkdir()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings",
        # No empty entry: it would put the working directory (a copy of the
        # package, whose types.py shadows the standard library's) on the path.
        "PYTHONPATH": os.pathsep.join(
            part
            for part in [str(ROOT), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
            if part
        ),
    }
    result = subprocess.run(
        [sys.executable, "-m", "django", "makemessages", "-l", "de", "--no-obsolete"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    fresh = po.read(copy / "locale" / "de" / "LC_MESSAGES" / "django.po")
    extracted = {(e.key, e.msgid_plural) for e in fresh.entries}
    for lang, catalog in catalogs().items():
        present = {(e.key, e.msgid_plural) for e in catalog.entries}
        assert present == extracted, (
            lang,
            "missing:",
            sorted(map(str, extracted - present)),
            "stale:",
            sorted(map(str, present - extracted)),
        )


def test_the_catalogs_are_in_the_package():
    """A wheel ships the .po and .mo files (setuptools' package-data)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "locale/**/*" in config["tool"]["setuptools"]["package-data"]["webauth"]


# -- messages made in code ----------------------------------------------------------------------


def test_a_passkeys_default_name_is_in_the_language_of_its_maker():
    agent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"
    assert device_name(agent) == "Chrome on Linux"
    with translation.override("de"):
        assert device_name(agent) == "Chrome unter Linux"
    with translation.override("ja"):
        assert device_name(agent) == "Linux の Chrome"


# -- pages in each language ---------------------------------------------------------------------


#: For each language: phrases each page must show, and the English sentence it must not.
PHRASES = {
    "de": {
        "expired": "Dieser Anmeldelink ist abgelaufen oder wurde bereits verwendet.",
        "signed_out": "Sie sind nicht angemeldet.",
        "signed_in_as": "Sie sind als <strong>alice</strong> angemeldet.",
        "signin": [
            "Mit Passkey anmelden",
            "Mit GitHub anmelden",
            "Stattdessen einen Anmeldelink per E-Mail senden",
            "Benutzername",
        ],
        "signin_error": "Die Anmeldung ist fehlgeschlagen.",
        "signout": "Möchten Sie sich wirklich abmelden?",
        "error": "Der Anmeldelink ist nicht mehr gültig.",
        "verify": "Ein Anmeldelink und ein Code wurden an Ihre E-Mail-Adresse gesendet.",
        "wrong_code": "Dieser Code ist falsch oder abgelaufen.",
        "confirm": "Als <strong>alice@example.com</strong> anmelden?",
        "elsewhere": "Dieser Anmeldelink funktioniert nur in dem Browser",
        "passkeys": "Sie haben noch keine Passkeys.",
        "subject": "Bei testserver anmelden",
        "body": "ignorieren Sie diese E-Mail: Ohne sie kann sich niemand anmelden.",
        "minutes": "10 Minuten lang gültig",
        "api": "Ungültiges oder abgelaufenes Sitzungstoken.",
    },
    "fr": {
        "expired": "Ce lien de connexion a expiré ou a déjà été utilisé.",
        "signed_out": "Vous n'êtes pas connecté.",
        "signed_in_as": "Vous êtes connecté en tant que <strong>alice</strong>.",
        "signin": [
            "Se connecter avec une clé d'accès",
            "Se connecter avec GitHub",
            "Recevoir plutôt un lien de connexion par e-mail",
            "Nom d'utilisateur",
        ],
        "signin_error": "La connexion a échoué.",
        "signout": "Voulez-vous vraiment vous déconnecter",
        "error": "Le lien de connexion n'est plus valide.",
        "verify": "Un lien de connexion et un code ont été envoyés à votre adresse e-mail.",
        "wrong_code": "Ce code est incorrect ou a expiré.",
        "confirm": "Se connecter en tant que <strong>alice@example.com</strong>",
        "elsewhere": "Ce lien de connexion ne fonctionne que dans le navigateur",
        "passkeys": "Vous n'avez pas encore de clé d'accès.",
        "subject": "Connexion à testserver",
        "body": "Si vous n'avez pas demandé à vous connecter, ignorez cet e-mail",
        "minutes": "pendant 10 minutes",
        "api": "Jeton de session invalide ou expiré.",
    },
    "es": {
        "expired": "Este enlace de inicio de sesión ha caducado o ya se ha usado.",
        "signed_out": "No has iniciado sesión.",
        "signed_in_as": "Has iniciado sesión como <strong>alice</strong>.",
        "signin": [
            "Iniciar sesión con una llave de acceso",
            "Iniciar sesión con GitHub",
            "Prefiero recibir un enlace de inicio de sesión",
            "Nombre de usuario",
        ],
        "signin_error": "No se pudo iniciar sesión.",
        "signout": "¿Seguro que quieres cerrar sesión?",
        "error": "El enlace de inicio de sesión ya no es válido.",
        "verify": "Se han enviado un enlace de inicio de sesión y un código",
        "wrong_code": "Ese código no es correcto o ha caducado.",
        "confirm": "¿Iniciar sesión como <strong>alice@example.com</strong>?",
        "elsewhere": "Este enlace de inicio de sesión solo funciona en el navegador",
        "passkeys": "Todavía no tienes llaves de acceso.",
        "subject": "Iniciar sesión en testserver",
        "body": "Si no pediste iniciar sesión, ignora este correo",
        "minutes": "en los próximos 10 minutos",
        "api": "Token de sesión no válido o caducado.",
    },
    "pt_BR": {
        "expired": "Este link de acesso expirou ou já foi usado.",
        "signed_out": "Você não está conectado.",
        "signed_in_as": "Você entrou como <strong>alice</strong>.",
        "signin": [
            "Entrar com uma chave de acesso",
            "Entrar com GitHub",
            "Prefiro receber um link de acesso por e-mail",
            "Nome de usuário",
        ],
        "signin_error": "Falha ao entrar.",
        "signout": "Tem certeza de que deseja sair?",
        "error": "O link de acesso não é mais válido.",
        "verify": "Um link de acesso e um código foram enviados para seu endereço de e-mail.",
        "wrong_code": "Esse código não está correto ou expirou.",
        "confirm": "Entrar como <strong>alice@example.com</strong>?",
        "elsewhere": "Este link de acesso só funciona no navegador",
        "passkeys": "Você ainda não tem chaves de acesso.",
        "subject": "Entrar em testserver",
        "body": "Se você não pediu para entrar, ignore este e-mail",
        "minutes": "em até 10 minutos",
        "api": "Token de sessão inválido ou expirado.",
    },
    "ja": {
        "expired": "このサインインリンクは有効期限が切れているか、すでに使用されています。",
        "signed_out": "サインインしていません。",
        "signed_in_as": "<strong>alice</strong> としてサインインしています。",
        "signin": [
            "パスキーでサインイン",
            "GitHubでサインイン",
            "代わりにサインインリンクをメールで受け取る",
            "ユーザー名",
        ],
        "signin_error": "サインインに失敗しました。",
        "signout": "サインアウトしてもよろしいですか？",
        "error": "このサインインリンクは無効になっています。",
        "verify": "サインインリンクとコードをメールアドレスに送信しました。",
        "wrong_code": "コードが正しくないか、有効期限が切れています。",
        "confirm": "<strong>alice@example.com</strong> としてサインインしますか？",
        "elsewhere": "このサインインリンクは、リクエストしたブラウザでのみ使用できます。",
        "passkeys": "パスキーはまだありません。",
        "subject": "testserver にサインイン",
        "body": "サインインをリクエストしていない場合は、このメールを無視してください。",
        "minutes": "10 分以内",
        "api": "セッショントークンが無効か、有効期限が切れています。",
    },
    "zh_Hans": {
        "expired": "此登录链接已过期或已被使用。",
        "signed_out": "你尚未登录。",
        "signed_in_as": "你已以 <strong>alice</strong> 身份登录。",
        "signin": ["使用通行密钥登录", "使用GitHub登录", "改为通过电子邮件发送登录链接", "用户名"],
        "signin_error": "登录失败。",
        "signout": "确定要退出登录吗？",
        "error": "此登录链接已失效。",
        "verify": "登录链接和验证码已发送到你的电子邮件地址。",
        "wrong_code": "验证码不正确或已过期。",
        "confirm": "以 <strong>alice@example.com</strong> 身份登录？",
        "elsewhere": "此登录链接只能在你请求它的浏览器中使用。",
        "passkeys": "你还没有通行密钥。",
        "subject": "登录 testserver",
        "body": "如果你没有请求登录，请忽略此邮件",
        "minutes": "有效期为 10 分钟",
        "api": "会话令牌无效或已过期。",
    },
}


@pytest.fixture(autouse=True)
def _back_to_english():
    # LocaleMiddleware activates the request's language on this thread; the next
    # test must start from LANGUAGE_CODE again.
    yield
    translation.deactivate()


@pytest.fixture
def site(settings, db):
    """Every kind of sign-in on one page, behind LocaleMiddleware."""
    middleware = list(settings.MIDDLEWARE)
    middleware.insert(
        middleware.index("django.contrib.sessions.middleware.SessionMiddleware") + 1,
        "django.middleware.locale.LocaleMiddleware",
    )
    settings.MIDDLEWARE = middleware
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
        "experimental": {"enable_webauthn": True},
        "providers": [
            Passkey(),
            GitHub(client_id="client-id", client_secret="client-secret"),
            DjangoCredentials(),
            Email(from_email="Example <no-reply@example.com>", max_age=600),
        ],
    }


def browser(lang: str) -> Client:
    return Client(headers={"accept-language": LANGUAGES[lang]})


def text_of(response) -> str:
    assert response.status_code < 500
    return html.unescape(response.content.decode())


def assert_in_language(lang: str, text: str) -> None:
    assert f'<html lang="{CODES[lang]}"' in text


def ask_for_email(client: Client, email: str = "alice@example.com"):
    data = {"csrfToken": csrf_pair(client), "email": email}
    return client.post("/auth/signin/email", data)


def link_in(message) -> str:
    (link,) = re.findall(r"http://testserver(/auth/callback/email\?\S+)", message.body)
    return link


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_sign_in_and_sign_out_pages(site, lang):
    client = browser(lang)
    phrases = PHRASES[lang]
    page = text_of(client.get("/auth/signin"))
    assert_in_language(lang, page)
    for phrase in phrases["signin"]:
        assert phrase in page, phrase
    for english in ("Sign in with a passkey", "Sign in with GitHub", "Email me a sign-in link"):
        assert english not in page

    page = text_of(client.get("/auth/signin?error=CredentialsSignin"))
    assert phrases["signin_error"] in page
    assert "Check the details you provided are correct" not in page

    page = text_of(client.get("/auth/signout"))
    assert_in_language(lang, page)
    assert phrases["signed_out"] in page
    assert "You are not signed in." not in page

    user = get_user_model().objects.create_user("alice", email="alice@example.com", password="x")
    force_sign_in(client, user)
    for path in ("/auth/signout", "/auth/signin"):
        page = text_of(client.get(path))
        assert phrases["signed_in_as"] in page, path
        assert "You are signed in as" not in page
    page = text_of(client.get("/auth/signout"))
    assert phrases["signout"] in page
    assert "Are you sure you want to sign out?" not in page


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_error_page(site, lang):
    page = text_of(browser(lang).get("/auth/error?error=Verification"))
    assert_in_language(lang, page)
    assert PHRASES[lang]["error"] in page
    assert "The sign in link is no longer valid." not in page
    page = text_of(browser(lang).get("/auth/error?error=SignInExpired"))
    assert PHRASES[lang]["expired"] in page
    assert "This sign-in link has expired" not in page


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_email_sign_in_in_each_language(site, lang):
    get_user_model().objects.create_user("alice", email="alice@example.com", password="x")
    phrases = PHRASES[lang]
    client = browser(lang)
    response = ask_for_email(client)
    assert response.status_code == 302

    # The email: subject, text and HTML.
    (message,) = mail.outbox
    assert message.subject == phrases["subject"]
    (alternative, mimetype) = message.alternatives[0]
    assert mimetype == "text/html"
    for body in (message.body, html.unescape(alternative)):
        assert phrases["body"] in body
        assert phrases["minutes"] in body
        assert "If you did not ask to sign in" not in body
        assert "The link and the code work once" not in body
    assert f'<html lang="{CODES[lang]}">' in alternative

    # The verify-request page, then a wrong code on it.
    page = text_of(client.get("/auth/verify-request?provider=email&type=email"))
    assert_in_language(lang, page)
    assert phrases["verify"] in page
    assert "have been sent to your email address" not in page
    (token,) = re.findall(r'name="csrfToken" value="([^"]+)"', page)
    wrong = text_of(client.post("/auth/callback/email", {"csrfToken": token, "code": "0000-0000"}))
    assert phrases["wrong_code"] in wrong
    assert "That code is not right" not in wrong

    # The confirmation page in the browser that asked, and the page for another one.
    page = text_of(client.get(link_in(message)))
    assert_in_language(lang, page)
    assert phrases["confirm"] in page
    assert "Sign in as" not in page
    page = text_of(browser(lang).get(link_in(message)))
    assert phrases["elsewhere"] in page
    assert "only works in the browser where you asked" not in page


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_passkeys_page(site, lang):
    user = get_user_model().objects.create_user("alice", email="a@example.com", password="x")
    client = browser(lang)
    force_sign_in(client, user)
    page = text_of(client.get("/passkeys/"))
    assert_in_language(lang, page)
    assert PHRASES[lang]["passkeys"] in page
    assert "You have no passkeys yet." not in page
    assert "Your passkeys" not in page


@pytest.mark.urls("tests.test_contrib_drf")
@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_api_error_in_each_language(site, settings, lang):
    settings.WEBAUTH = {**settings.WEBAUTH, "bearer": True}
    response = browser(lang).get("/api/profile", HTTP_AUTHORIZATION="Bearer nope")
    assert response.status_code == 401
    assert response.json()["detail"] == PHRASES[lang]["api"]


#: The account center in each language.
ACCOUNT_PHRASES = {
    "de": {
        "index": ["Ihr Konto", ">Sitzungen<", "Verbundene Konten verwalten"],
        "sessions": "In diesem Browser abmelden",
        "connections": "Beim Verbinden oder Trennen werden Sie eventuell zuerst gebeten",
        "email": "Neue E-Mail-Adresse",
        "sent": "Wir haben einen Code an new@example.com gesendet.",
        "subject": "Bestätigen Sie Ihre neue E-Mail-Adresse für testserver",
        "body": "Ohne den Code ändert sich Ihre Adresse nicht.",
        "reauth": "Bestätigen Sie, dass Sie es sind",
    },
    "fr": {
        "index": ["Votre compte", "Gérer vos sessions", "Gérer vos comptes associés"],
        "sessions": "Se déconnecter de ce navigateur",
        "connections": "Pour associer ou dissocier un compte",
        "email": "Nouvelle adresse e-mail",
        "sent": "Nous avons envoyé un code à new@example.com.",
        "subject": "Confirmez votre nouvelle adresse e-mail pour testserver",
        "body": "votre adresse ne changera pas sans le code.",
        "reauth": "Confirmez votre identité",
    },
    "es": {
        "index": ["Tu cuenta", ">Sesiones<", "Gestionar tus cuentas conectadas"],
        "sessions": "Cerrar sesión en este navegador",
        "connections": "Para conectar o desconectar, puede que primero te pidamos",
        "email": "Nueva dirección de correo electrónico",
        "sent": "Hemos enviado un código a new@example.com.",
        "subject": "Confirma tu nueva dirección de correo electrónico para testserver",
        "body": "tu dirección no cambiará sin el código.",
        "reauth": "Confirma que eres tú",
    },
    "pt_BR": {
        "index": ["Sua conta", ">Sessões<", "Gerenciar suas contas conectadas"],
        "sessions": "Sair neste navegador",
        "connections": "Ao conectar ou desconectar, talvez seja preciso",
        "email": "Novo endereço de e-mail",
        "sent": "Enviamos um código para new@example.com.",
        "subject": "Confirme seu novo endereço de e-mail para testserver",
        "body": "seu endereço não muda sem o código.",
        "reauth": "Confirme que é você",
    },
    "ja": {
        "index": ["連携アカウントを管理", ">セッション<", "セッションを管理"],
        "sessions": "このブラウザからサインアウト",
        "connections": "連携や連携解除の前に、本人確認を求められることがあります。",
        "email": "新しいメールアドレス",
        "sent": "new@example.com にコードを送信しました。",
        "subject": "testserver の新しいメールアドレスを確認してください",
        "body": "コードがなければアドレスは変更されません。",
        "reauth": "本人確認",
    },
    "zh_Hans": {
        "index": ["你的账号", ">会话<", "管理你的关联账号"],
        "sessions": "在此浏览器上退出登录",
        "connections": "关联或解除关联前，可能需要先确认是你本人。",
        "email": "新的电子邮件地址",
        "sent": "我们已向 new@example.com 发送验证码。",
        "subject": "确认你在 testserver 的新电子邮件地址",
        "body": "没有验证码，你的地址不会更改。",
        "reauth": "确认是你本人",
    },
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_account_center_in_each_language(site, lang):
    user = get_user_model().objects.create_user("alice", email="alice@example.com", password="x")
    phrases = ACCOUNT_PHRASES[lang]
    client = browser(lang)
    with freeze_time("2031-03-04 10:00:00") as clock:
        force_sign_in(client, user)
        page = text_of(client.get("/account/"))
        assert_in_language(lang, page)
        for phrase in phrases["index"]:
            assert phrase in page, phrase
        assert "Manage your sessions" not in page
        if lang != "fr":  # French says "Sessions" too
            assert ">Sessions<" not in page

        page = text_of(client.get("/account/sessions/"))
        assert phrases["sessions"] in page
        assert "Your sessions are kept by your browsers" not in page

        page = text_of(client.get("/account/connections/"))
        assert phrases["connections"] in page
        assert "Connecting or disconnecting may ask you" not in page

        page = text_of(client.get("/account/email/"))
        assert phrases["email"] in page
        assert "New email address" not in page

        # Changing the address: the page's notice and the email with the code.
        page = text_of(client.post("/account/email/", {"op": "send", "email": "new@example.com"}))
        assert phrases["sent"] in page
        (message,) = mail.outbox
        assert message.subject == phrases["subject"]
        for body in (message.body, html.unescape(message.alternatives[0][0])):
            assert phrases["body"] in body
            assert "your address will not change without the code" not in body

        # Past the freshness window, a sensitive change asks to sign in again.
        clock.tick(3600)
        page = text_of(client.get("/account/reauthenticate/?next=/account/email/"))
        assert_in_language(lang, page)
        assert phrases["reauth"] in page
        assert "Confirm it is you" not in page


#: The admin's sessions list under JWT sessions: its note, and the app's name.
ADMIN_PHRASES = {
    "de": ("Sitzungen werden in verschlüsselten Cookies gespeichert", "Web-Authentifizierung"),
    "fr": ("Les sessions sont conservées dans des cookies chiffrés", "Authentification web"),
    "es": ("Las sesiones se guardan en cookies cifradas", "Autenticación web"),
    "pt_BR": ("As sessões ficam em cookies criptografados", "Autenticação web"),
    "ja": ("セッションは暗号化された Cookie に保存されるため", "Web 認証"),
    "zh_Hans": ("会话保存在加密的 Cookie 中", "Web 身份验证"),
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_admin_in_each_language(site, admin_client, lang):
    page = text_of(
        admin_client.get(
            reverse("admin:webauth_session_changelist"),
            headers={"accept-language": LANGUAGES[lang]},
        )
    )
    note, app = ADMIN_PHRASES[lang]
    assert note in page
    assert app in page
    assert "encrypted cookies" not in page
    assert "Web authentication" not in page


def test_english_stays_english(site):
    page = text_of(Client().get("/auth/signin"))
    assert '<html lang="en"' in page
    assert "Email me a sign-in link instead" in page and "Sign in with a passkey" in page
