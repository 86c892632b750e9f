"""The provider base class shared by every provider type.

A provider is configuration: its id, name and type, the options of its kind, and
small pure hooks (profile mapping, endpoint defaults). It runs no flow: the
routes pick the flow for a provider by its :attr:`Provider.type`
(:func:`webauth.flows.flow_for`), and the flow reads the provider's options.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import ClassVar, Final, Self

from django.core.checks import CheckMessage

__all__ = ["TIMEOUT", "Provider"]

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")

#: Seconds to wait for a provider's servers, as ``(connect, read)``: every
#: request webauth makes to a provider (discovery, tokens, profile APIs) uses it.
TIMEOUT: Final = (5, 15)


class Provider:
    """A way to sign in. Subclasses set ``type`` and the options of their kind.

    ``type`` is how webauth tells kinds apart: ``"credentials"``, ``"oauth"``,
    ``"oidc"`` (and, with their issues, ``"email"`` and ``"webauthn"``).

    ``id`` appears in URLs (``/auth/signin/<id>``, ``/auth/callback/<id>``), so it
    is limited to letters, digits, ``-`` and ``_``.

    ``docs_page`` is the page that documents the kind, named in the hints of
    its configuration problems.
    """

    type: ClassVar[str] = ""
    docs_page: ClassVar[str] = "docs/providers.md"
    default_id: ClassVar[str] = ""
    default_name: ClassVar[str] = ""

    def __init__(
        self, *, id: str | None = None, name: str | None = None, **options: object
    ) -> None:
        self.id = id or self.default_id
        self.name = name or self.default_name or self.id
        self.options: dict[str, object] = options

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"

    @property
    def env_prefix(self) -> str:
        """``AUTH_<ID>``: the prefix of this provider's environment variables."""
        return "AUTH_" + self.id.upper().replace("-", "_")

    def apply_env(self, env: Callable[[str], str | None]) -> None:
        """Fill options from ``AUTH_<ID>_*`` environment variables, on this object.

        Subclasses override it to read their variables. webauth itself never calls
        it on the object a project configured: it calls :meth:`with_env`.
        """

    def with_env(self, env: Callable[[str], str | None]) -> Self:
        """This provider with the environment's defaults filled in (``set_env_defaults``).

        The provider itself is left as it is: when the environment changes
        anything, the answer is a copy (shallow: options are shared, not changed).
        """
        configured = copy.copy(self)
        configured.apply_env(env)
        return self if vars(configured) == vars(self) else configured

    def validate(self) -> list[str]:
        """Problems with this provider's configuration, as messages naming the fix."""
        problems = []
        if not isinstance(self.id, str) or not _ID_RE.match(self.id):
            problems.append(
                f"provider id {self.id!r} must be letters, digits, '-' or '_' (it is used in URLs)"
            )
        return problems

    def system_checks(self) -> list[CheckMessage]:
        """System-check messages for this provider (``manage.py check``)."""
        return []

    def to_json(self, base_url: str) -> Mapping[str, object]:
        """This provider's entry in ``GET /auth/providers``."""
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "signinUrl": f"{base_url}/signin/{self.id}",
            "callbackUrl": f"{base_url}/callback/{self.id}",
        }
