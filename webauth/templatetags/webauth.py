"""Template tags: ``{% load webauth %}``.

``{% webauth_signin_buttons %}`` renders a sign-in form per provider (each a POST
with webauth's CSRF token); ``{% webauth_signin_buttons callback_url="/next" %}``
sets where the user lands. ``{% provider_signin_url "github" %}`` is the URL a
provider's form posts to, and ``{% webauth_csrf_token %}`` the hidden CSRF input a
hand-written form needs.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag(takes_context=True)
def webauth_signin_buttons(context: Any, callback_url: str | None = None) -> SafeString:
    """A sign-in form per provider, for use in the project's own templates."""
    from ..conf import get_config
    from ..context import AuthContext
    from ..pages import provider_forms

    request = context.get("request")
    if request is None:
        raise template.TemplateSyntaxError(
            "{% webauth_signin_buttons %} needs the request in the template context "
            "(enable django.template.context_processors.request)."
        )
    ctx = AuthContext(request, get_config(), body={})
    target = callback_url or request.get_full_path()
    token = _csrf_token(request, ctx)
    html = render_to_string(
        "webauth/signin_buttons.html",
        {
            "providers": provider_forms(ctx.config.providers, ctx.base_url),
            "csrf_token_value": token,
            "callback_url": ctx.redirect(target),
        },
        request=request,
    )
    return mark_safe(html)


def _csrf_token(request: Any, ctx: Any) -> str:
    """webauth's CSRF token for a form on this page; the cookie goes out with the response."""
    pending = request.__dict__.get("_webauth_pending_csrf")
    if pending is not None:
        return str(pending.token)  # one token per response, however many forms
    if ctx.csrf.cookie is not None:
        request._webauth_pending_csrf = ctx.csrf  # written by AuthMiddleware
    return str(ctx.csrf.token)


@register.simple_tag(takes_context=True)
def webauth_csrf_token(context: Any) -> SafeString:
    """A hidden ``csrfToken`` input for a hand-written form that posts to webauth's routes.

    Django's ``{% csrf_token %}`` does not do here: webauth checks its own
    (Auth.js's) double-submit token. The cookie is set by ``AuthMiddleware`` on
    the response that renders the form.
    """
    from ..conf import get_config
    from ..context import AuthContext

    request = context.get("request")
    if request is None:
        raise template.TemplateSyntaxError(
            "{% webauth_csrf_token %} needs the request in the template context "
            "(enable django.template.context_processors.request)."
        )
    token = _csrf_token(request, AuthContext(request, get_config(), body={}))
    return format_html('<input type="hidden" name="csrfToken" value="{}">', token)


@register.simple_tag(takes_context=True)
def provider_signin_url(context: Any, provider_id: str) -> str:
    """The URL a provider's sign-in form posts to."""
    from ..conf import get_config

    config = get_config()
    provider = config.get_provider(provider_id)
    if provider is None:
        raise template.TemplateSyntaxError(f"Unknown webauth provider {provider_id!r}")
    action = "callback" if provider.type == "credentials" else "signin"
    return f"{config.base_path}/{action}/{provider_id}"
