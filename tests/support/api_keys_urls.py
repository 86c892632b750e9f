"""tests.support.api_keys_site's URLconf: one view that wants an API key with "read"."""

from django.http import JsonResponse
from django.urls import include, path

from webauth.decorators import api_key_required


@api_key_required("read")
def key(request):
    return JsonResponse({"user": request.user.get_username()})


# webauth's routes too: the servers are ready once GET /auth/csrf answers.
urlpatterns = [path("key", key), path("auth/", include("webauth.urls"))]
