"""Views of the benchmark site, as small as possible so that the stack is what gets measured."""

from django.http import HttpRequest, HttpResponse


def plain(request: HttpRequest) -> HttpResponse:
    """A constant answer that reads nothing from the request."""
    return HttpResponse(b"ok", content_type="text/plain")


def whoami(request: HttpRequest) -> HttpResponse:
    """The primary key of ``request.user`` (``None`` when anonymous)."""
    return HttpResponse(str(request.user.pk), content_type="text/plain")
