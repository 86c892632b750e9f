from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("private/", views.private, name="private"),
    path("passkeys/", views.passkeys, name="passkeys"),
    path("api/me/", views.api_me, name="api-me"),
    path("admin/", admin.site.urls),
    # webauth: /auth/signin, /auth/signout, /auth/session, /auth/csrf, /auth/callback/...
    path("auth/", include("webauth.urls")),
    # webauth's account center: sessions, connections, passkeys, email address, and the
    # page that asks for a new sign-in before a sensitive change (docs/account.md).
    path("account/", include("webauth.account.urls")),
    # The bundled Example IdP (not needed to use webauth).
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
