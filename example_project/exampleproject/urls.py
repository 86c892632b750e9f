from django.contrib import admin
from django.urls import include, path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("private/", views.private, name="private"),
    path("api/me/", views.api_me, name="api-me"),
    path("admin/", admin.site.urls),
    # webauth: /auth/signin, /auth/signout, /auth/session, /auth/csrf, /auth/callback/...
    path("auth/", include("webauth.urls")),
]
