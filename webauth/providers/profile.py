"""Reading a provider's profile into ``{"id", "name", "email", "image"}``.

Small pure helpers for profile mappings, used by the generic
:class:`~webauth.providers.oauth.OAuth2` provider and by every built-in one. They
never raise on a missing or oddly typed optional field: a service that leaves out
a name or an avatar gives ``None`` there. Only a missing account id is an error,
because the id is what links the account to its user.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "Profile",
    "dig",
    "full_name",
    "json_object",
    "require_id",
    "standard_profile",
    "text",
]

#: A provider's profile, or the token response, as JSON: read with the helpers below.
Profile = dict[str, object]


def text(value: object) -> str | None:
    """*value* if it is a non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


def dig(data: object, *path: str | int) -> object:
    """``data[path[0]][path[1]]...``, or ``None`` as soon as a step is missing.

    A string step reads a mapping key, an integer step a list item.
    """
    for step in path:
        if isinstance(step, str) and isinstance(data, Mapping):
            data = data.get(step)
        elif isinstance(step, int) and isinstance(data, list) and -len(data) <= step < len(data):
            data = data[step]
        else:
            return None
    return data


def require_id(value: object, provider_id: str) -> str:
    """The account id as a string; raises ``ValueError`` when the profile has none.

    Auth.js falls back to a random UUID here, which silently creates a new
    account on every sign-in; refusing is safer.
    """
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError(f"the {provider_id!r} profile has no account id")
    if isinstance(value, int | str):
        return str(value)
    raise ValueError(f"the {provider_id!r} profile's account id is not a string or number")


def full_name(*parts: object) -> str | None:
    """The non-empty string *parts* joined with spaces, or ``None``."""
    words = [part.strip() for part in parts if isinstance(part, str) and part.strip()]
    return " ".join(words) or None


def standard_profile(profile: Mapping[str, object], provider_id: str) -> dict[str, object]:
    """Auth.js's default mapping, for OpenID claims and similar profiles.

    id = ``sub`` or ``id`` (required); name = ``name``, ``nickname`` or
    ``preferred_username``; ``email``; image = ``picture``.
    """
    ident = profile.get("sub")
    if ident is None or ident == "":
        ident = profile.get("id")
    return {
        "id": require_id(ident, provider_id),
        "name": text(profile.get("name"))
        or text(profile.get("nickname"))
        or text(profile.get("preferred_username")),
        "email": text(profile.get("email")),
        "image": text(profile.get("picture")),
    }


def json_object(data: object, what: str) -> dict[str, object]:
    """*data* if it is a JSON object; raises ``ValueError`` naming *what* otherwise."""
    if not isinstance(data, dict):
        raise ValueError(f"{what} is not a JSON object")
    return data
