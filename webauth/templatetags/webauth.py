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
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from ..conf import get_config
from ..flows import flow_for
from ..pages import provider_forms
from ..state import get_state

register = template.Library()


def _request(context: Any, tag: str) -> HttpRequest:
    request: HttpRequest | None = context.get("request")
    if request is None:
        raise template.TemplateSyntaxError(
            f"{{% {tag} %}} needs the request in the template context "
            "(enable django.template.context_processors.request)."
        )
    return request


@register.simple_tag(takes_context=True)
def webauth_signin_buttons(context: Any, callback_url: str | None = None) -> SafeString:
    """A sign-in form per provider, for use in the project's own templates.

    Every form on a page carries the same CSRF token; when it is a new one,
    ``AuthMiddleware`` sets its cookie on the response that renders the page.
    """
    request = _request(context, "webauth_signin_buttons")
    state = get_state(request)
    target = callback_url or request.get_full_path()
    html = render_to_string(
        "webauth/signin_buttons.html",
        {
            "providers": provider_forms(state.config.providers, state.base_url),
            "csrf_token_value": state.form_csrf_token(),
            "callback_url": state.redirect(target),
        },
        request=request,
    )
    return mark_safe(html)


@register.simple_tag(takes_context=True)
def webauth_csrf_token(context: Any) -> SafeString:
    """A hidden ``csrfToken`` input for a hand-written form that posts to webauth's routes.

    Django's ``{% csrf_token %}`` does not do here: webauth checks its own
    (Auth.js's) double-submit token. The cookie is set by ``AuthMiddleware`` on
    the response that renders the form.
    """
    state = get_state(_request(context, "webauth_csrf_token"))
    return format_html('<input type="hidden" name="csrfToken" value="{}">', state.form_csrf_token())


@register.simple_tag(takes_context=True)
def provider_signin_url(context: Any, provider_id: str) -> str:
    """The URL a provider's sign-in form posts to."""
    config = get_config()
    provider = config.get_provider(provider_id)
    if provider is None:
        raise template.TemplateSyntaxError(f"Unknown webauth provider {provider_id!r}")
    flow = flow_for(provider)
    action = "callback" if flow is not None and flow.posts_to_callback else "signin"
    return f"{config.base_path}/{action}/{provider_id}"
