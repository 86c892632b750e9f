"""URLs of the fleet site: the admin and webauth's routes as docs/installation.md mounts them."""

from django.contrib import admin
from django.urls import include, path

from . import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("auth/", include("webauth.urls")),
    path("whoami", views.whoami),
]
