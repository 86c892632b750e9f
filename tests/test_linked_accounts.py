"""Linked accounts: listing, unlinking (never the last way in), and the sign-in page."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from webauth.linked_accounts import LastSignInMethod, linked_accounts, sign_in_methods, unlink
from webauth.models import Account, Authenticator
from webauth.providers.oauth import OIDC

pytestmark = pytest.mark.django_db


def link(user, provider, ident="1"):
    return Account.objects.create(
        user=user, type="oauth", provider=provider, provider_account_id=ident, access_token="t"
    )


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("lin")  # no usable password


def test_list_accounts_hides_tokens(user):
    link(user, "github")
    link(user, "google", "g")
    listed = linked_accounts(user)
    assert [a.provider for a in listed] == ["github", "google"]
    assert not hasattr(listed[0], "access_token")


def test_unlink_when_another_way_remains(user):
    link(user, "github")
    link(user, "google", "g")
    assert unlink(user, "github") is True
    assert [a.provider for a in linked_accounts(user)] == ["google"]


def test_the_last_account_cannot_be_unlinked(user):
    link(user, "github")
    with pytest.raises(LastSignInMethod):
        unlink(user, "github")
    assert Account.objects.filter(user=user).count() == 1


def test_a_password_or_passkey_counts_as_a_way_in(user):
    link(user, "github")
    user.set_password("a-password-123")
    user.save()
    assert sign_in_methods(user) == 2
    assert unlink(user, "github") is True
    other = get_user_model().objects.create_user("pk")
    link(other, "github", "2")
    Authenticator.objects.create(
        user=other,
        credential_id="c",
        provider_account_id="c",
        credential_public_key="k",
        credential_device_type="singleDevice",
    )
    assert unlink(other, "github") is True


def test_unlink_unknown_is_false(user):
    assert unlink(user, "nothing") is False


def test_admin_unlink_keeps_the_last_way_in(admin_client, user):
    account = link(user, "github")
    response = admin_client.post(
        reverse("admin:webauth_account_changelist"),
        {"action": "unlink", "_selected_action": [account.pk]},
        follow=True,
    )
    assert Account.objects.filter(pk=account.pk).exists()
    assert b"the only way those users can sign in" in response.content


def test_built_in_provider_by_id(settings):
    from webauth.conf import get_config

    settings.WEBAUTH = {**settings.WEBAUTH, "providers": ["github"]}
    provider = get_config().get_provider("github")
    assert provider is not None and provider.name == "GitHub"


def test_unknown_built_in_provider_id(settings):
    from django.core.exceptions import ImproperlyConfigured

    from webauth.conf import build_config

    with pytest.raises(ImproperlyConfigured, match="not a built-in provider id"):
        build_config({"secret": "x" * 40, "providers": ["nosuchprovider"]}, lambda k: None)


def test_sign_in_page_shows_oauth_buttons_with_local_icons(client, settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [
            "webauth.providers.DjangoCredentials",
            "github",
            OIDC(
                id="corp",
                name="Corp SSO",
                issuer="https://sso.example",
                client_id="c",
                client_secret="s",
            ),
        ],
    }
    html = client.get("/auth/signin").content.decode()
    assert 'action="http://testserver/auth/signin/github"' in html
    assert "Sign in with GitHub" in html and "Sign in with Corp SSO" in html
    assert 'src="/static/webauth/providers/github.svg"' in html
    assert "https://" not in html.split("<body", 1)[1].replace("https://sso.example", "")


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("OAuthAccountNotLinked", "sign in with the same account you used originally"),
        ("OAuthCallbackError", "Try signing in with a different account"),
        ("SomethingElse", "Unable to sign in"),
    ],
)
def test_sign_in_page_error_messages(client, error, message):
    html = client.get(f"/auth/signin?error={error}").content.decode()
    assert message in html


@pytest.mark.parametrize(
    ("received", "expected", "ok"),
    [
        ("https://a.example", "https://a.example", True),
        ("https://a.example/", "https://a.example", False),
        (
            "https://login.microsoftonline.com/72f9/v2.0",
            "https://login.microsoftonline.com/{tenantid}/v2.0",
            True,
        ),
        (
            "https://login.microsoftonline.com/a/b/v2.0",
            "https://login.microsoftonline.com/{tenantid}/v2.0",
            False,
        ),
        (
            "https://evil.example/72f9/v2.0",
            "https://login.microsoftonline.com/{tenantid}/v2.0",
            False,
        ),
    ],
)
def test_issuer_parameter_matching(received, expected, ok):
    from webauth.flows.oauth import _issuer_matches

    assert _issuer_matches(received, expected) is ok


def test_linked_accounts_go_through_a_third_party_adapter(settings):
    from asgiref.sync import async_to_sync

    from webauth.testing.memory import MemoryAdapter
    from webauth.types import AdapterAccount, AdapterUser

    adapter = MemoryAdapter()
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": adapter}
    user = async_to_sync(adapter.create_user)(AdapterUser(id="", email="m@example.com"))
    for provider in ("github", "google"):
        account = AdapterAccount(
            user_id=user.id, type="oauth", provider=provider, provider_account_id=provider[:2]
        )
        async_to_sync(adapter.link_account)(account)
    assert [a.provider for a in linked_accounts(user)] == ["github", "google"]
    assert sign_in_methods(user) == 2
    assert unlink(user, "github") is True
    with pytest.raises(LastSignInMethod):
        unlink(user, "google")
    assert Account.objects.count() == 0  # nothing went to the Django tables
    assert [key[0] for key in adapter.accounts] == ["google"]
