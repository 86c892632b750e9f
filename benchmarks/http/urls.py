"""URLs of the benchmark site: tiny views and webauth's routes, as a user mounts them."""

from django.urls import include, path

from . import views

# Django tries the patterns in order, each miss costing about 0.4 us in process,
# so the order is part of what a case measures: webauth's routes come one
# pattern after the session floor (2f), their yardstick, and the other floors
# after them.
urlpatterns = [
    path("plain", views.plain),
    path("whoami", views.whoami),
    path("floor/session", views.session_floor),
    path("auth/", include("webauth.urls")),
    path("floor/csrf", views.csrf_floor),
    path("floor/providers", views.providers_floor),
]
