import json

from django.http import JsonResponse
from django.shortcuts import render

from webauth import get_session
from webauth.decorators import auth_required


def home(request):
    """Anyone: shows who is signed in, or the sign-in form."""
    session = request.auth_session  # the dict GET /auth/session returns, or None
    return render(
        request,
        "exampleproject/home.html",
        {"session_json": json.dumps(session, indent=2) if session else None},
    )


@auth_required  # signed out: redirected to /auth/signin?callbackUrl=/private/
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
