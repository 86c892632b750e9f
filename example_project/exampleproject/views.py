import json

from django.conf import settings
from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from webauth import get_session
from webauth.decorators import auth_required
from webauth.errors import LastSignInMethod
from webauth.passkeys import list_passkeys, remove_passkey, rename_passkey

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


@auth_required
@require_http_methods(["GET", "POST"])
def passkeys(request):
    """The signed-in user's passkeys: list, rename, remove, and add one.

    Built on webauth.passkeys (webauth also has a ready-made page,
    webauth.passkeys.passkeys_view, to route as it is). Changes are POSTs,
    protected by Django's CSRF middleware like any form, and each one redirects
    back here (post/redirect/get). The "Create a passkey" button is
    {% webauth_passkey_register %} in the template.
    """
    if request.method == "POST":
        credential_id = request.POST.get("credential_id", "")
        if request.POST.get("action") == "remove":
            try:
                if remove_passkey(request, credential_id):
                    messages.success(request, "Passkey removed.")
            except LastSignInMethod:
                messages.error(
                    request,
                    "This passkey is your only way to sign in. Add another passkey "
                    "before you remove it.",
                )
        else:
            try:
                if rename_passkey(request, credential_id, request.POST.get("name", "")):
                    messages.success(request, "Passkey renamed.")
            except ValueError as error:  # an empty name
                messages.error(request, str(error))
        return redirect("passkeys")
    return render(request, "exampleproject/passkeys.html", {"passkeys": list_passkeys(request)})


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
