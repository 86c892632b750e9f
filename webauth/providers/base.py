"""The provider base class shared by every provider type."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from django.core.checks import CheckMessage

__all__ = ["Provider"]

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


class Provider:
    """A way to sign in. Subclasses set ``type`` and implement their flow.

    ``id`` appears in URLs (``/auth/signin/<id>``, ``/auth/callback/<id>``), so it
    is limited to letters, digits, ``-`` and ``_``.
    """

    type: ClassVar[str] = ""
    default_id: ClassVar[str] = ""
    default_name: ClassVar[str] = ""

    def __init__(self, *, id: str | None = None, name: str | None = None, **options: Any) -> None:
        self.id = id or self.default_id
        self.name = name or self.default_name or self.id
        self.options: dict[str, Any] = options

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"

    @property
    def env_prefix(self) -> str:
        """``AUTH_<ID>``: the prefix of this provider's environment variables."""
        return "AUTH_" + self.id.upper().replace("-", "_")

    def apply_env(self, env: Callable[[str], str | None]) -> None:
        """Fill options from ``AUTH_<ID>_*`` environment variables (``set_env_defaults``)."""

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

    def to_json(self, base_url: str) -> Mapping[str, Any]:
        """This provider's entry in ``GET /auth/providers``."""
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "signinUrl": f"{base_url}/signin/{self.id}",
            "callbackUrl": f"{base_url}/callback/{self.id}",
        }
