from django.contrib import admin
from django.urls import include, path

from webauth.passkeys import passkeys_view

from . import views

urlpatterns = [
    path("auth/", include("webauth.urls")),
    path("admin/", admin.site.urls),
    path("idp/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("", views.home, name="home"),
    path("private/", views.private, name="private"),
    path("mfa-protected/", views.mfa_protected),
    path("mfa-protected/strict/", views.mfa_protected_strict),
    path("private-async/", views.private_async, name="private-async"),
    path("private-cbv/", views.PrivateView.as_view(), name="private-cbv"),
    path("private-custom/", views.private_custom, name="private-custom"),
    path("private-page/", views.private_page_view, name="private-page"),
    path("members/page/", views.private_page, name="members-page"),
    path("members/public/", views.public_cache),
    path("members-async/public/", views.public_cache_async),
    path("public/", views.public_cache),
    path("private-public-cache/", views.private_public_cache),
    path("private-stricter/", views.private_stricter),
    path("private-async-public-cache/", views.private_async_public_cache),
    path("whoami/", views.whoami, name="whoami"),
    path("forged-jwks/", views.forged_jwks, name="forged-jwks"),
    path("fake-token/", views.fake_token, name="fake-token"),
    path("fake-userinfo/", views.fake_userinfo, name="fake-userinfo"),
    path("whoami-async/", views.whoami_async, name="whoami-async"),
    path("buttons/", views.buttons, name="buttons"),
    path("login-form/", views.login_form),
    path("helper-signin/", views.helper_signin, name="helper-signin"),
    path("helper-signout/", views.helper_signout, name="helper-signout"),
    path("account/settings/", views.whoami, name="account-settings"),
    path("session-only/", views.session_only, name="session-only"),
    path("staff-only/", views.staff_only, name="staff-only"),
    path("staff-only-async/", views.staff_only_async, name="staff-only-async"),
    path("private-cbv-custom/", views.PrivateCustomView.as_view(), name="private-cbv-custom"),
    path("contrib-login/", views.contrib_login, name="contrib-login"),
    path("session-async/", views.session_async, name="session-async"),
    path("private-cbv-async/", views.PrivateAsyncView.as_view(), name="private-cbv-async"),
    path("passkeys/", passkeys_view, name="passkeys"),
    path("account/", include("webauth.account.urls")),
    path("passkey-signin/", views.passkey_signin, name="passkey-signin"),
]
