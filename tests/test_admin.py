"""The admin pages of webauth's tables and their actions."""

import html
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from webauth.models import Account, Authenticator, Session, VerificationToken, token_hash

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(db):
    user = get_user_model().objects.create_user("dora")
    later = timezone.now() + timedelta(days=1)
    session = Session.objects.create(user=user, token_hash=token_hash("t"), expires=later)
    account = Account.objects.create(
        user=user,
        type="oauth",
        provider="github",
        provider_account_id="42",
        access_token="gho_secret",
    )
    passkey = Authenticator.objects.create(
        user=user,
        credential_id="cred-1",
        provider_account_id="cred-1",
        credential_public_key="pk",
        credential_device_type="multiDevice",
    )
    VerificationToken.objects.create(identifier="d@example.com", token_hash="h", expires=later)
    return {"session": session, "account": account, "passkey": passkey}


@pytest.mark.parametrize("model", ["session", "account", "authenticator", "verificationtoken"])
def test_changelists_render(admin_client, data, model):
    response = admin_client.get(reverse(f"admin:webauth_{model}_changelist"))
    assert response.status_code == 200
    assert b"gho_secret" not in response.content


def test_change_pages_hide_tokens(admin_client, data):
    response = admin_client.get(reverse("admin:webauth_account_change", args=[data["account"].pk]))
    assert response.status_code == 200 and b"gho_secret" not in response.content
    response = admin_client.get(reverse("admin:webauth_session_change", args=[data["session"].pk]))
    assert response.status_code == 200 and token_hash("t").encode() not in response.content


def test_verification_grants_show_attempts_never_hashes(admin_client, db):
    grant = VerificationToken.objects.create(
        identifier="g@example.com",
        token_hash=token_hash("link-token"),
        code_hash=token_hash("code"),
        expires=timezone.now() + timedelta(minutes=15),
        attempts=3,
    )
    pages = [
        admin_client.get(reverse("admin:webauth_verificationtoken_changelist")),
        admin_client.get(reverse("admin:webauth_verificationtoken_change", args=[grant.pk])),
    ]
    for response in pages:
        assert response.status_code == 200
        assert b"g@example.com" in response.content
        assert token_hash("link-token").encode() not in response.content
        assert token_hash("code").encode() not in response.content
    assert b'class="field-attempts">3<' in pages[0].content
    assert b"failed code attempts" in pages[1].content.lower()


@pytest.mark.parametrize(
    ("model", "action", "key"),
    [
        ("session", "revoke", "session"),
        ("account", "unlink", "account"),
        ("authenticator", "remove", "passkey"),
    ],
)
def test_actions_delete_the_selected_rows(admin_client, data, model, action, key):
    obj = data[key]
    response = admin_client.post(
        reverse(f"admin:webauth_{model}_changelist"),
        {"action": action, "_selected_action": [obj.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert not type(obj).objects.filter(pk=obj.pk).exists()


def test_search_sessions_by_ip(admin_client, data):
    response = admin_client.get(reverse("admin:webauth_session_changelist"), {"q": "10.0.0.1"})
    assert response.status_code == 200


def test_migrations_match_the_models():
    call_command("makemigrations", "webauth", "--check", "--dry-run", verbosity=0)


def test_accounts_cannot_be_deleted_past_the_unlink_rule(admin_client, data):
    account = data["account"]
    response = admin_client.get(reverse("admin:webauth_account_delete", args=[account.pk]))
    assert response.status_code == 403
    changelist = admin_client.get(reverse("admin:webauth_account_changelist"))
    assert b"delete_selected" not in changelist.content


def test_passkeys_list_names_dates_and_sync_state(admin_client, data):
    passkey = data["passkey"]
    Authenticator.objects.filter(pk=passkey.pk).update(
        name="Pixel phone", credential_backed_up=True, backup_eligible=True
    )
    response = admin_client.get(reverse("admin:webauth_authenticator_changelist"))
    assert response.status_code == 200
    for column in ("name", "created_at", "last_used_at", "credential_device_type"):
        assert f"column-{column}" in response.content.decode()
    assert b"Pixel phone" in response.content
    found = admin_client.get(reverse("admin:webauth_authenticator_changelist"), {"q": "Pixel"})
    assert found.context["cl"].result_count == 1


def test_removing_passkeys_keeps_a_users_last_way_in(admin_client, data):
    lone = get_user_model().objects.create_user("only-passkey")
    last = Authenticator.objects.create(
        user=lone,
        credential_id="cred-last",
        provider_account_id="cred-last",
        credential_public_key="pk",
        credential_device_type="multiDevice",
        name="Last one",
    )
    Account.objects.create(
        user=lone, type="webauthn", provider="passkey", provider_account_id="cred-last"
    )
    response = admin_client.post(
        reverse("admin:webauth_authenticator_changelist"),
        {"action": "remove", "_selected_action": [data["passkey"].pk, last.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert not Authenticator.objects.filter(pk=data["passkey"].pk).exists()
    assert Authenticator.objects.filter(pk=last.pk).exists()
    assert Account.objects.filter(user=lone).exists()
    assert b"1 passkey removed." in response.content
    assert b"Kept Last one: the only way those users can sign in." in response.content


def test_passkeys_cannot_be_deleted_past_the_remove_rule(admin_client, data):
    passkey = data["passkey"]
    response = admin_client.get(reverse("admin:webauth_authenticator_delete", args=[passkey.pk]))
    assert response.status_code == 403
    changelist = admin_client.get(reverse("admin:webauth_authenticator_changelist"))
    assert b"delete_selected" not in changelist.content


def test_challenges_and_user_handles_are_not_in_the_admin():
    from django.contrib import admin

    from webauth.models import WebAuthnChallenge, WebAuthnUserHandle

    assert not admin.site.is_registered(WebAuthnChallenge)
    assert not admin.site.is_registered(WebAuthnUserHandle)


# -- lists that explain themselves --------------------------------------------------------


def explanation(response):
    """The note above a changelist (admin/webauth/change_list.html), or None."""
    assert response.status_code == 200
    return response.context.get("webauth_explanation")


def test_sessions_under_the_jwt_strategy_say_where_sessions_are(admin_client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"strategy": "jwt"}}
    response = admin_client.get(reverse("admin:webauth_session_changelist"))
    note = explanation(response)
    assert "encrypted cookies (the JWT session strategy)" in note
    assert "WEBAUTH['session']['strategy'] = 'database'" in note
    assert b'id="webauth-explanation"' in response.content
    assert "encrypted cookies" in response.content.decode()


def test_database_sessions_explain_an_empty_list_only(admin_client, settings, data):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "database"},
    }
    url = reverse("admin:webauth_session_changelist")
    assert explanation(admin_client.get(url)) is None
    Session.objects.all().delete()
    response = admin_client.get(url)
    assert explanation(response).startswith("Nobody is signed in.")
    assert b'id="webauth-explanation"' in response.content


def test_a_search_with_no_match_is_not_explained_as_an_empty_table(admin_client, data):
    url = reverse("admin:webauth_authenticator_changelist")
    response = admin_client.get(url, {"q": "no such passkey"})
    assert response.context["cl"].result_count == 0
    assert explanation(response) is None


@pytest.mark.parametrize(
    ("model", "providers", "said"),
    [
        ("authenticator", [], "Passkeys are off: WEBAUTH['providers'] has no Passkey"),
        ("authenticator", ["passkey"], "One is added when a user creates an account with a"),
        ("verificationtoken", [], "Email sign-in is off: WEBAUTH['providers'] has no Email"),
        ("verificationtoken", ["email"], "One is added when someone asks for a sign-in link"),
        ("account", [], "One is added when a user first signs in with an OAuth"),
    ],
)
def test_empty_lists_say_what_fills_them(admin_client, settings, db, model, providers, said):
    from webauth.providers import Email, Passkey

    made = {"passkey": Passkey(relying_party={"id": "localhost"}), "email": Email()}
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
        "experimental": {"enable_webauthn": True},
        "providers": ["webauth.providers.DjangoCredentials", *(made[p] for p in providers)],
    }
    response = admin_client.get(reverse(f"admin:webauth_{model}_changelist"))
    assert said in explanation(response)
    assert said in html.unescape(response.content.decode())


@pytest.mark.parametrize("model", ["account", "authenticator", "verificationtoken"])
def test_lists_with_rows_need_no_explanation(admin_client, data, model):
    assert explanation(admin_client.get(reverse(f"admin:webauth_{model}_changelist"))) is None


# -- the user's page: linked accounts and passkeys -----------------------------------------


def test_user_page_lists_linked_accounts_and_passkeys_never_tokens(admin_client, data):
    user = data["account"].user
    Account.objects.filter(pk=data["account"].pk).update(
        refresh_token="ghr_refresh_secret", id_token="eyJ.id-token-secret", scope="read:user"
    )
    Account.objects.create(
        user=user, type="oidc", provider="example-idp", provider_account_id="sub-7"
    )
    response = admin_client.get(reverse("admin:auth_user_change", args=[user.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Linked accounts" in page and "Passkeys" in page
    for shown in ("github", "42", "read:user", "example-idp", "sub-7", "multiDevice"):
        assert shown in page, shown
    for secret in ("gho_secret", "ghr_refresh_secret", "id-token-secret"):
        assert secret not in page
    # Read-only: no way to add or delete a row from the user's page.
    formsets = {f.formset.prefix: f for f in response.context["inline_admin_formsets"]}
    # The second factors too (webauth.mfa), read-only, never the sealed key.
    assert set(formsets) == {
        "webauth_accounts",
        "webauth_authenticators",
        "webauth_second_factors",
    }
    for inline in formsets.values():
        assert not inline.has_add_permission and not inline.formset.can_delete


def test_the_user_page_still_saves_and_adds_users(admin_client, data):
    user = data["account"].user
    url = reverse("admin:auth_user_change", args=[user.pk])
    page = admin_client.get(url)
    form = {
        "username": "dora",
        "first_name": "Dora",
        "last_name": "",
        "email": "",
        "is_active": "on",
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": "2025-01-01",
        "date_joined_1": "00:00:00",
    }
    for inline in page.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        form.update({management.add_prefix(k): v for k, v in management.initial.items()})
        for sub in inline.formset.forms:
            form[sub.add_prefix("id")] = sub.instance.pk
            form[sub.add_prefix("user")] = user.pk
    saved = admin_client.post(url, form)
    assert saved.status_code == 302, saved.context and saved.context["errors"]
    user.refresh_from_db()
    assert user.first_name == "Dora"
    assert Account.objects.filter(user=user).exists()  # the accounts stay linked
    added = admin_client.post(
        reverse("admin:auth_user_add"),
        {"username": "newcomer", "password1": "pw-0123456789!", "password2": "pw-0123456789!"},
    )
    assert added.status_code == 302
    assert get_user_model().objects.filter(username="newcomer").exists()


def test_only_djangos_stock_user_admin_is_extended():
    from django.contrib import admin
    from django.contrib.auth.admin import UserAdmin

    from webauth.admin import (
        AccountInline,
        PasskeyInline,
        SecondFactorInline,
        UserAdminWithSignIns,
        show_sign_ins_on_user_admin,
    )

    User = get_user_model()
    assert type(admin.site.get_model_admin(User)) is UserAdminWithSignIns

    stock = admin.AdminSite(name="stock")
    stock.register(User, UserAdmin)
    show_sign_ins_on_user_admin(stock)
    show_sign_ins_on_user_admin(stock)  # again: no change, no AlreadyRegistered
    assert type(stock.get_model_admin(User)) is UserAdminWithSignIns
    assert UserAdminWithSignIns.inlines == (AccountInline, PasskeyInline, SecondFactorInline)

    class ProjectUserAdmin(UserAdmin):
        list_display = ("username",)

    own = admin.AdminSite(name="own")
    own.register(User, ProjectUserAdmin)
    show_sign_ins_on_user_admin(own)
    assert type(own.get_model_admin(User)) is ProjectUserAdmin

    show_sign_ins_on_user_admin(admin.AdminSite(name="none"))  # no user admin: nothing to do


def test_access_token_sessions_are_listed_read_only_and_explained(admin_client, settings):
    from webauth.models import TokenSession
    from webauth.tokens.keys import generate

    url = reverse("admin:webauth_tokensession_changelist")
    assert "Access tokens are off" in explanation(admin_client.get(url))
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "tokens": {"keys": [generate().export(private_key=True)], "audiences": ["api"]},
    }
    assert explanation(admin_client.get(url)).startswith("No access token sessions yet.")
    row = TokenSession.objects.create(
        sid="Sid-1", user_id="7", expires=timezone.now() + timedelta(minutes=5), minted=True
    )
    response = admin_client.get(url)
    assert explanation(response) is None
    assert b"Sid-1" in response.content
    change = reverse("admin:webauth_tokensession_change", args=[row.pk])
    assert admin_client.post(change, {"ended": "2026-12-01 12:00:00"}).status_code == 403
    assert TokenSession.objects.get(pk=row.pk).ended is None
    assert admin_client.get(reverse("admin:webauth_tokensession_add")).status_code == 403
