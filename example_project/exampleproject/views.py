import json

from django.conf import settings
from django.http import Http404, JsonResponse
from django.shortcuts import render

from webauth import get_session
from webauth.decorators import api_key_required, auth_required

from .mail import read_outbox


def home(request):
    """Anyone: shows who is signed in, or the sign-in form."""
    session = request.auth_session  # the dict GET /auth/session returns, or None
    return render(
        request,
        "exampleproject/home.html",
        {"session_json": json.dumps(session, indent=2) if session else None},
    )


@auth_required  # signed out: to /auth/signin?callbackUrl=/private/&error=SessionRequired
def private(request):
    return render(request, "exampleproject/private.html")


def api_me(request):
    """JSON for scripts and front ends: 401 without a session."""
    session = get_session(request)
    if session is None:
        return JsonResponse({"error": "Not signed in"}, status=401)
    user = request.user  # the Django user whose primary key is the session's "sub"
    return JsonResponse(
        {
            "username": user.get_username(),
            "is_staff": user.is_staff,
            "session": session,
        }
    )


@api_key_required("profile:read")
def api_key_me(request):
    """The same for a script with an API key (made at /account/api-keys/):

    curl -H "Authorization: Bearer wak_..." http://localhost:8000/api/key/me/
    """
    if request.api_key.user is None:  # a group's key acts as no user
        return JsonResponse(
            {"group": request.api_key.owner.name, "key": request.api_key.record.name}
        )
    return JsonResponse(
        {"username": request.user.get_username(), "key": request.api_key.record.name}
    )


def groups_of(user):
    """``api_keys.owners_of``: the groups whose API keys *user* manages (their own)."""
    return user.groups.all()


def outbox(request):
    """DEBUG only: the last emails sent (sign-in links and codes), newest first.

    urls.py routes it only when DEBUG is on; the check here is a second lock.
    """
    if not settings.DEBUG:
        raise Http404
    response = render(request, "exampleproject/outbox.html", {"emails": read_outbox()})
    # The page holds live sign-in links: no cache keeps it, no Referer leaks them.
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response
