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


@csrf_exempt
def helper_signin(request):
    data = json.loads(request.body or b"{}")
    result = sign_in(
        request,
        data.get("provider_id", ""),
        redirect_to=data.get("redirect_to"),
        options=data.get("options"),
        authorization_params=data.get("authorization_params"),
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
