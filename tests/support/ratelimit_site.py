"""What tests.support.settings_ratelimit serves: a credentials provider and a middleware.

``application`` is the WSGI application gunicorn loads.
"""

import os

from webauth.providers import Credentials

refuse_everyone = Credentials(
    credentials={"username": {"type": "text"}, "password": {"type": "password"}},
    authorize=lambda credentials, request: None,
)


def worker_pid(get_response):
    """Name the process that served each response (``X-Worker-Pid``)."""

    def middleware(request):
        response = get_response(request)
        response["X-Worker-Pid"] = str(os.getpid())
        return response

    return middleware


def application(environ, start_response):
    # Made on first use, in the worker: Django is set up after gunicorn forks.
    global _application
    if _application is None:
        from django.core.wsgi import get_wsgi_application

        _application = get_wsgi_application()
    return _application(environ, start_response)


_application = None
