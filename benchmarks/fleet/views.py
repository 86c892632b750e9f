"""The fleet site's own page: most of a site's requests only read ``request.user``."""

from django.http import HttpRequest, HttpResponse


def whoami(request: HttpRequest) -> HttpResponse:
    """The signed-in user's username, or an empty body when anonymous.

    The load script compares it with the account it signed in as, so a session
    that ended or belongs to someone else shows up as an error.
    """
    user = request.user
    name = user.get_username() if user.is_authenticated else ""
    return HttpResponse(name.encode(), content_type="text/plain")
