from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("private/", views.private, name="private"),
    # One passkeys page: the account center's (webauth_account:passkeys). The address
    # the example used to have its own page at leads there.
    path("passkeys/", RedirectView.as_view(pattern_name="webauth_account:passkeys")),
    path("api/me/", views.api_me, name="api-me"),
    path("api/key/me/", views.api_key_me, name="api-key-me"),
    path("admin/", admin.site.urls),
    # webauth: /auth/signin, /auth/signout, /auth/session, /auth/csrf, /auth/callback/...
    path("auth/", include("webauth.urls")),
    # The access tokens' public keys at the conventional address (docs/tokens.md).
    path("", include("webauth.well_known_urls")),
    # webauth's account center: sessions, connections, passkeys, email address, and the
    # page that asks for a new sign-in before a sensitive change (docs/account.md).
    path("account/", include("webauth.account.urls")),
    # Django's set_language view (POST /i18n/setlang/), behind the language switcher
    # of base.html: its cookie carries the language to webauth's pages.
    path("i18n/", include("django.conf.urls.i18n")),
    # Browsers ask for /favicon.ico on pages that name no icon (webauth's own pages).
    path("favicon.ico", RedirectView.as_view(url=static("exampleproject/favicon.svg"))),
    # The bundled Example IdP (not needed to use webauth): a separate site in spirit,
    # with its own look (idp_login.html).
    path(
        "idp/login/",
        auth_views.LoginView.as_view(template_name="exampleproject/idp_login.html"),
        name="idp-login",
    ),
    path("idp/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]

if settings.DEBUG:
    # The emails the development backend kept (exampleproject/mail.py): sign-in links
    # to click. Not routed at all without DEBUG.
    urlpatterns.append(path("dev/outbox/", views.outbox, name="dev-outbox"))
