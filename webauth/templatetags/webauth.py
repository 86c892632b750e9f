"""Template tags: ``{% load webauth %}``.

``{% webauth_signin_buttons %}`` renders a sign-in form per provider (each a POST
with webauth's CSRF token); ``{% webauth_signin_buttons callback_url="/next" %}``
sets where the user lands. ``{% provider_signin_url "github" %}`` is the URL a
provider's form posts to.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.loader import render_to_string
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
    # Issue the CSRF cookie along with the response that shows these forms.
    pending = getattr(request, "_webauth_pending_csrf", None)
    if ctx.csrf.cookie is not None and pending is None:
        request._webauth_pending_csrf = ctx.csrf  # written by AuthMiddleware
    token = (pending or ctx.csrf).token
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
