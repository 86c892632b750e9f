"""A URLconf with webauth's routes only (for ``settings_not_installed``)."""

from django.urls import include, path

urlpatterns = [path("auth/", include("webauth.urls"))]
