"""URLs of the benchmark site: tiny views and webauth's routes, as a user mounts them."""

from django.urls import include, path

from . import views

urlpatterns = [
    path("plain", views.plain),
    path("whoami", views.whoami),
    path("floor/session", views.session_floor),
    path("auth/", include("webauth.urls")),
]
