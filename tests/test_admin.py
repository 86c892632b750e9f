"""The admin pages of webauth's tables and their actions."""

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
