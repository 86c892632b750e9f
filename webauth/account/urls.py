"""``path("account/", include("webauth.account.urls"))`` routes the account center.

Its own include, beside ``webauth.urls``: ``webauth.urls`` is the Auth.js route
space under ``base_path`` (``/auth/session``, ``/auth/signin``...), whose other
paths answer Auth.js's ``400``; the account center is a set of the project's
pages, mounted wherever the project wants them, or not at all (the template
tags and :mod:`webauth.reauth` work either way).

URL names (namespace ``webauth_account``): ``index``, ``sessions``,
``connections``, ``passkeys``, ``email``, ``password``, ``security``,
``api_keys`` (with ``WEBAUTH["api_keys"]``), ``reauthenticate``. For example
``{% url "webauth_account:sessions" %}``.
"""

from django.urls import path

from . import views

app_name = "webauth_account"

urlpatterns = [
    path("", views.index, name="index"),
    path("sessions/", views.sessions, name="sessions"),
    path("connections/", views.connections, name="connections"),
    path("passkeys/", views.passkeys, name="passkeys"),
    path("email/", views.email, name="email"),
    path("password/", views.password, name="password"),
    path("security/", views.security_page, name="security"),
    path("api-keys/", views.api_keys_page, name="api_keys"),
    path("reauthenticate/", views.reauthenticate, name="reauthenticate"),
]
