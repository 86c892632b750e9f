import json

from django.http import HttpResponse, JsonResponse
from django.template import engines
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from webauth import aget_session, get_session, sign_in, sign_out
from webauth.decorators import AuthRequiredMixin, auth_required


def home(request):
    return HttpResponse("home")


@auth_required
def private(request):
    return JsonResponse({"session": request.auth_session})


@auth_required
async def private_async(request):
    return JsonResponse({"session": await aget_session(request)})


class PrivateView(AuthRequiredMixin, View):
    def get(self, request):
        return HttpResponse("cbv")


@auth_required(redirect_to="/custom-login/")
def private_custom(request):
    return HttpResponse("custom")


def private_page(request):
    """A page a person sees: "Hello, <name>." and a sign-out button posting to webauth."""
    template = engines["django"].from_string(
        '{% load webauth %}<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>Private</title></head><body><main>"
        "<h1>Hello, {{ request.auth_session.user.name }}.</h1>"
        '<form method="post" action="/auth/signout">{% webauth_csrf_token %}'
        '<input type="hidden" name="callbackUrl" value="/">'
        '<button type="submit" id="sign-out">Sign out</button></form>'
        "</main></body></html>"
    )
    return HttpResponse(template.render({}, request))


private_page_view = auth_required(private_page)


@auth_required
def private_public_cache(request):
    """A view that asks for a shared cache: the decorator must still keep it private."""
    response = HttpResponse("cached?")
    response["Cache-Control"] = "public, max-age=600"
    return response


@auth_required
def private_stricter(request):
    """A view with its own stricter header: the decorator adds to it."""
    response = HttpResponse("strict")
    response["Cache-Control"] = "no-cache, must-revalidate, max-age=0"
    return response


def public_cache(request):
    """No decorator: under ``protected_paths`` the middleware keeps it private."""
    response = HttpResponse("public?")
    response["Cache-Control"] = "public, max-age=600"
    return response


async def public_cache_async(request):
    response = HttpResponse("public? (async)")
    response["Cache-Control"] = "public, max-age=600"
    return response


@auth_required
async def private_async_public_cache(request):
    response = HttpResponse("cached? (async)")
    response["Cache-Control"] = "public, max-age=600"
    return response


def whoami(request):
    user = request.user
    return JsonResponse(
        {
            "authenticated": user.is_authenticated,
            "username": getattr(user, "username", None),
            "session": get_session(request),
            "auth_session_is_none": request.auth_session is None,
        }
    )


async def whoami_async(request):
    user = await request.auser()
    return JsonResponse(
        {
            "authenticated": user.is_authenticated,
            "username": getattr(user, "username", None),
        }
    )


def buttons(request):
    template = engines["django"].from_string(
        "{% load webauth %}<div id=buttons>{% webauth_signin_buttons %}</div>"
    )
    return HttpResponse(template.render({}, request))


def login_form(request):
    """A hand-written sign-in form, as a project would write one."""
    template = engines["django"].from_string(
        "{% load webauth %}"
        '<form method="post" action="{% provider_signin_url "credentials" %}">'
        "{% webauth_csrf_token %}{% webauth_csrf_token %}"
        '<input name="username"><input name="password" type="password"></form>'
    )
    return HttpResponse(template.render({}, request))


@csrf_exempt
def helper_signin(request):
    data = json.loads(request.body or b"{}")
    result = sign_in(
        request,
        data.get("provider_id", ""),
        redirect_to=data.get("redirect_to"),
        options=data.get("options"),
        authorization_params=data.get("authorization_params"),
        email=data.get("email"),
    )
    if isinstance(result, HttpResponse):
        return result
    return JsonResponse(
        {
            "failed": result.failed,
            "field_errors": result.field_errors,
            "form_errors": result.form_errors,
        },
        status=400,
    )


@csrf_exempt
def helper_signout(request):
    result = sign_out(request, redirect_to=request.GET.get("next"))
    if isinstance(result, HttpResponse):
        return result
    return JsonResponse({"failed": result.failed}, status=400)


#: A JWKS the OAuth tests fill with a key the provider never signed with.
FORGED_JWKS: dict = {"keys": []}


def forged_jwks(request):
    return JsonResponse(FORGED_JWKS)


# -- request integration tests (test_middleware, test_decorators, test_asgi) ---------

from django.contrib.auth import authenticate, login  # noqa: E402

from webauth.decorators import session_passes_test  # noqa: E402


def session_only(request):
    """Reads ``request.auth_session`` and nothing else (never ``request.user``)."""
    return JsonResponse({"session": request.auth_session})


def _is_staff_address(session):
    email = (session or {}).get("user", {}).get("email") or ""
    return email.endswith("@staff.example.com")


@session_passes_test(_is_staff_address)
def staff_only(request):
    return HttpResponse("staff")


@session_passes_test(_is_staff_address, redirect_to="/not-staff/")
async def staff_only_async(request):
    return HttpResponse("staff async")


class PrivateCustomView(AuthRequiredMixin, View):
    redirect_to = "/cbv-login/"

    def get(self, request):
        return HttpResponse("cbv custom")


@csrf_exempt
def contrib_login(request):
    """Signs in through ``django.contrib.auth.login`` and reports ``request.user`` after it."""
    user = authenticate(
        request, username=request.POST.get("username"), password=request.POST.get("password")
    )
    login(request, user)
    return JsonResponse({"username": request.user.username})


async def session_async(request):
    """An async view reading the session and the user the async way."""
    session = await aget_session(request)
    user = await request.auser()
    return JsonResponse(
        {
            "session": session,
            "auth_session_matches": request.auth_session == session,
            "authenticated": user.is_authenticated,
            "username": getattr(user, "username", None),
        }
    )


class PrivateAsyncView(AuthRequiredMixin, View):
    async def get(self, request):
        return JsonResponse({"session": await aget_session(request)})


#: What the fake token endpoint of the private_key_jwt test received.
TOKEN_REQUESTS: list = []


@csrf_exempt
def fake_token(request):
    """A token endpoint that accepts only a valid private_key_jwt client assertion."""
    from jwcrypto import jwk, jwt

    from .keys import rsa_key_pem

    TOKEN_REQUESTS.append(request.POST.dict())
    key = jwk.JWK.from_pem(rsa_key_pem("client").encode())
    try:
        assertion = jwt.JWT(jwt=request.POST["client_assertion"], key=key, algs=["RS256"])
        claims = json.loads(assertion.claims)
    except Exception:
        return JsonResponse({"error": "invalid_client"}, status=401)
    expected = request.build_absolute_uri()
    if claims.get("iss") != "pk-client" or claims.get("sub") != "pk-client":
        return JsonResponse({"error": "invalid_client"}, status=401)
    if claims.get("aud") not in (expected, [expected]):
        return JsonResponse({"error": "invalid_client"}, status=401)
    return JsonResponse({"access_token": "pk-access", "token_type": "Bearer", "expires_in": 3600})


def fake_userinfo(request):
    if request.headers.get("Authorization") != "Bearer pk-access":
        return JsonResponse({"error": "invalid_token"}, status=401)
    return JsonResponse({"sub": "pk-user-1", "email": "pk@example.com", "name": "Pat Key"})


# -- passkeys (test_passkeys_browser) --------------------------------------------------------


def passkey_signin(request):
    """A project's own sign-in page: autofill and the button from one tag."""
    template = engines["django"].from_string(
        '{% load webauth %}<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>Sign in</title></head><body><main><h1>Sign in to the project</h1>"
        '<div id="project-signin">{% webauth_passkey_signin callback_url="/whoami/" %}</div>'
        "</main></body></html>"
    )
    return HttpResponse(template.render({}, request))


from webauth.decorators import mfa_required  # noqa: E402


@mfa_required
def mfa_protected(request):
    """A page for sessions that proved two factors (tests/test_mfa_browser.py)."""
    return HttpResponse("<main>two factors</main>")


@mfa_required(max_age=1)
def mfa_protected_strict(request):
    """The same, proven in the last second (step-up)."""
    return HttpResponse("<main>two factors, just now</main>")
