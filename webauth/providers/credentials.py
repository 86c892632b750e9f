"""The credentials provider: sign-in with whatever fields you declare.

Example::

    from webauth.providers import Credentials

    def authorize(credentials, request):
        user = find_user(credentials["email"])
        if user and user.check_password(credentials["password"]):
            return user
        return None  # -> /auth/signin?error=CredentialsSignin&code=credentials

    WEBAUTH = {
        "providers": [
            Credentials(
                credentials={
                    "email": {"label": "Email", "type": "email"},
                    "password": {"label": "Password", "type": "password"},
                },
                authorize=authorize,  # or "myapp.auth.authorize"
            )
        ],
    }

``DjangoCredentials`` does this through ``django.contrib.auth.authenticate()``, so
the project's users, password hashers and authentication backends work as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from ..utils import resolve
from .base import Provider

__all__ = ["Credentials", "DjangoCredentials"]

Authorize = Callable[[Mapping[str, object], HttpRequest], Any]
#: The fields of the sign-in form: name -> its attributes (``label``, ``type``...).
Fields = Mapping[str, Mapping[str, object]]


class Credentials(Provider):
    """Sign-in with declared fields checked by an ``authorize`` function.

    ``credentials`` maps each field name to its attributes: ``label``, ``type``
    (``text``, ``password``, ``email``, ...), and any HTML attribute such as
    ``placeholder``, ``autocomplete`` or ``required``.

    ``authorize(credentials, request)`` receives the submitted fields (the whole
    parsed body, as Auth.js does) and the Django request; it returns a user (a
    model instance, or a mapping with ``id``, ``name``, ``email``, ``image``) or
    ``None``, or raises :class:`webauth.errors.CredentialsSignin`. It may be
    ``async def``, and may be given as a dotted path.
    """

    type = "credentials"
    docs_page = "docs/credentials.md"
    default_id = "credentials"
    default_name = "Credentials"

    def __init__(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        credentials: Fields | None = None,
        authorize: Authorize | str | None = None,
        **options: object,
    ) -> None:
        super().__init__(id=id, name=name, **options)
        credentials, authorize = self.with_defaults(credentials, authorize)
        self.credentials: dict[str, dict[str, object]] = {
            k: dict(v) for k, v in (credentials or {}).items()
        }
        self._authorize = authorize

    def with_defaults(
        self, credentials: Fields | None, authorize: Authorize | str | None
    ) -> tuple[Fields | None, Authorize | str | None]:
        """The fields and ``authorize`` to use when the project gave *credentials*
        and *authorize* (a subclass fills in its own); here, as given."""
        return credentials, authorize

    @property
    def authorize_function(self) -> Authorize | None:
        """The ``authorize`` callable (a dotted path is imported: Python keeps the module)."""
        return resolve(self._authorize) if self._authorize is not None else None

    def validate(self) -> list[str]:
        problems = super().validate()
        if self._authorize is None:
            problems.append(
                f"credentials provider {self.id!r} needs authorize=<callable or dotted path>"
            )
        elif not isinstance(self._authorize, str) and not callable(self._authorize):
            problems.append(f"credentials provider {self.id!r}: authorize must be callable")
        elif isinstance(self._authorize, str):
            try:
                fn = self.authorize_function
            except ImportError as exc:
                problems.append(
                    f"credentials provider {self.id!r}: could not import "
                    f"authorize={self._authorize!r} ({exc}); fix the dotted path"
                )
            else:
                if not callable(fn):
                    problems.append(
                        f"credentials provider {self.id!r}: authorize={self._authorize!r} "
                        "is not callable"
                    )
        for field, attrs in self.credentials.items():
            if not isinstance(attrs, dict):
                problems.append(
                    f"credentials provider {self.id!r}: field {field!r} must map to a dict "
                    "of attributes such as {'label': ..., 'type': ...}"
                )
        return problems


def _django_authorize(credentials: Mapping[str, object], request: HttpRequest) -> Any:
    # Imported here: django.contrib.auth's functions need the app registry, and a
    # settings module may import this provider before Django has set it up.
    from django.contrib.auth import authenticate, get_user_model

    username_field = get_user_model().USERNAME_FIELD
    username = credentials.get("username", credentials.get(username_field))
    password = credentials.get("password")
    if not isinstance(username, str) or not isinstance(password, str):
        return None
    if not username or not password:
        return None
    return authenticate(request, username=username, password=password)


class DjangoCredentials(Credentials):
    """Credentials checked by ``django.contrib.auth.authenticate()``.

    Fields ``username`` and ``password``; the project's authentication backends
    decide (so inactive users, custom backends and password upgrades behave as
    they do in ``django.contrib.auth``). The user's primary key becomes the
    session's ``sub``.
    """

    default_id = "credentials"
    default_name = "Password"

    def with_defaults(
        self, credentials: Fields | None, authorize: Authorize | str | None
    ) -> tuple[Fields | None, Authorize | str | None]:
        """A username and a password, checked by Django's ``authenticate()``, unless given."""
        fields = credentials or {
            "username": {
                "label": _("Username"),
                "type": "text",
                "autocomplete": "username",
                "required": True,
            },
            "password": {
                "label": _("Password"),
                "type": "password",
                "autocomplete": "current-password",
                "required": True,
            },
        }
        return fields, authorize or _django_authorize
