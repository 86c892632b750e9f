"""Flows under AUTH_USER_MODEL = "webauth.User" (run by tests/test_models_user.py)."""

import pytest
from django.contrib.auth import get_user_model

from webauth import jwt as jose
from webauth.adapters.django import DjangoAdapter

from .helpers import csrf_pair

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
pytestmark = pytest.mark.django_db


def test_the_user_model_is_webauths():
    assert get_user_model()._meta.label == "webauth.User"


def test_credentials_sign_in_with_email_and_password(client):
    user = get_user_model().objects.create_user(
        "ada@example.com", "analytical engine", name="Ada", image="https://example.com/a.png"
    )
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "ada@example.com", "password": "analytical engine"},
    )
    assert response.status_code == 302 and "error" not in response["Location"]
    claims = jose.decode(
        token=response.cookies["authjs.session-token"].value,
        secret=SECRET,
        salt="authjs.session-token",
    )
    assert claims["sub"] == str(user.pk)
    assert claims["name"] == "Ada" and claims["picture"] == "https://example.com/a.png"


def test_adapter_creates_users_without_username():
    record = DjangoAdapter().create_user({"email": "New@Example.com", "name": "New"})
    user = get_user_model().objects.get(pk=record.id)
    # Stored in webauth's canonical form (webauth.identity).
    assert user.email == "new@example.com" and user.name == "New"
    assert not user.has_usable_password()


def test_records_carry_the_name_image_and_verification_fields():
    from datetime import UTC, datetime

    verified = datetime(2026, 1, 2, tzinfo=UTC)
    user = get_user_model().objects.create_user(
        "grace@example.com", None, name="Grace", image="https://example.com/g.png"
    )
    user.email_verified = verified
    record = DjangoAdapter().to_record(user)
    assert (record.name, record.image, record.email_verified) == (
        "Grace",
        "https://example.com/g.png",
        verified,
    )
    user.name, user.image = "", ""
    record = DjangoAdapter().to_record(user)
    assert record.name is None and record.image is None and record.instance is user


def test_admin_lists_and_adds_webauth_users(admin_client):
    from django.urls import reverse

    assert admin_client.get(reverse("admin:webauth_user_changelist")).status_code == 200
    response = admin_client.post(
        reverse("admin:webauth_user_add"),
        {
            "email": "added@example.com",
            "password1": "a-long-enough-pass-123",
            "password2": "a-long-enough-pass-123",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    user = get_user_model().objects.get(email="added@example.com")
    assert user.check_password("a-long-enough-pass-123")
    change = admin_client.get(reverse("admin:webauth_user_change", args=[user.pk]))
    assert change.status_code == 200


def test_admin_user_page_lists_the_users_passkeys(admin_client):
    from django.urls import reverse

    from webauth.models import Authenticator

    user = get_user_model().objects.create_user("keys@example.com")
    Authenticator.objects.create(
        user=user,
        credential_id="cred-inline",
        provider_account_id="cred-inline",
        credential_public_key="pk",
        credential_device_type="multiDevice",
        credential_backed_up=True,
        name="Laptop keychain",
    )
    change = admin_client.get(reverse("admin:webauth_user_change", args=[user.pk]))
    assert change.status_code == 200
    assert b"Laptop keychain" in change.content
    assert b"webauth_authenticators-TOTAL_FORMS" in change.content


def test_admin_user_page_lists_the_users_linked_accounts_without_tokens(admin_client):
    from django.urls import reverse

    from webauth.models import Account

    user = get_user_model().objects.create_user("linked@example.com")
    Account.objects.create(
        user=user,
        type="oauth",
        provider="github",
        provider_account_id="4242",
        access_token="gho_inline_secret",
        refresh_token="ghr_inline_secret",
    )
    change = admin_client.get(reverse("admin:webauth_user_change", args=[user.pk]))
    assert change.status_code == 200
    assert b"webauth_accounts-TOTAL_FORMS" in change.content
    assert b"Linked accounts" in change.content and b"4242" in change.content
    assert b"gho_inline_secret" not in change.content
    assert b"ghr_inline_secret" not in change.content
