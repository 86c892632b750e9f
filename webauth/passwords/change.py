"""Changing a password, or setting a first one (``WEBAUTH["passwords"]["change"]``).

The account center's Password section (:func:`webauth.account.views.password`)
calls :func:`change_password` for a user who has a usable password (the
current one typed first) and :func:`set_password` for one who has none (a
user made by an email sign-in, a passkey or an OAuth provider). Each returns
a :class:`Result`: what was refused, and why, or that the new password is
saved; the view's part is the request (CSRF, re-authentication, the page).

What they do:

* **Django's forms and validators.** ``PasswordChangeForm`` and
  ``SetPasswordForm`` check the fields, with ``AUTH_PASSWORD_VALIDATORS``
  (whose refusals are put on the new password's first field, where the page
  shows its rules). Values longer than :data:`MAX_PASSWORD_LENGTH` are refused
  before any hasher or validator sees them.
* **A rate limit** (``password_change``: per client address and per user, the
  user's id as the key). Each attempt is counted before anything is checked,
  and given back once the current password proved right (a change) or the
  new one is saved (a set): only wrong current passwords add up, and a flood
  of sets is bounded all the same. A refused attempt checks nothing.
* **One change per password.** The new hash is written by one conditional
  ``UPDATE`` of the password column, on the hash that was checked: of two
  changes made at once from the same current password, or two first
  passwords set at once, one is saved and the other is refused
  (``Result.stale``), on every database. No other column of the user is
  written (a stale instance overwrites nothing), and the validators'
  ``password_changed`` hooks run as ``AbstractBaseUser.save()`` runs them.
* **What follows** is :func:`webauth.passwords.changed.password_changed`
  with ``keep_current=True``: the request's own session stays signed in
  (re-issued under JWT), every other session of the user ends, trusted
  browsers are forgotten, the ``password_changed`` event is sent
  (``how="change"`` or ``"set"``) and the owner is mailed.

Nothing here logs a password or what was typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.core.validators import MaxLengthValidator
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables

from .. import ratelimit
from ..conf import get_config
from ..providers.credentials import DjangoCredentials
from ..utils import user_id
from .changed import How, password_changed
from .forms import PASSWORD_MAX_LENGTH

if TYPE_CHECKING:
    from django.http import HttpRequest

    from ..conf import Config

__all__ = [
    "ACTION",
    "MAX_PASSWORD_LENGTH",
    "ChangeForm",
    "Result",
    "SetForm",
    "achange_password",
    "aset_password",
    "available",
    "change_password",
    "has_password",
    "help_texts",
    "set_password",
    "stored_user",
]

#: The rate-limit action an attempt counts against (``rate_limits``).
ACTION = "password_change"

#: The longest password taken, current or new (characters): the sign-up's limit.
MAX_PASSWORD_LENGTH = PASSWORD_MAX_LENGTH

#: The fields of the forms, by their Django names (what the page posts).
CURRENT, NEW1, NEW2 = "old_password", "new_password1", "new_password2"


def _model_has_password(model: Any) -> bool:
    """Whether *model* keeps a password Django can check (``AbstractBaseUser``'s)."""
    return any(f.name == "password" for f in model._meta.concrete_fields) and all(
        callable(getattr(model, name, None))
        for name in ("set_password", "check_password", "has_usable_password")
    )


def available(config: Config | None = None) -> bool:
    """Whether passwords are changed and set here: ``passwords.change`` on, a
    ``DjangoCredentials`` provider to sign in with them, and a user model with a
    password field."""
    config = config or get_config()
    return (
        config.passwords.change
        and any(isinstance(p, DjangoCredentials) for p in config.providers)
        and _model_has_password(get_user_model())
    )


def has_password(user: Any) -> bool:
    """Whether *user* has a usable password (one to change, rather than set)."""
    usable = getattr(user, "has_usable_password", None)
    return callable(usable) and bool(usable())


def help_texts() -> list[str]:
    """What ``AUTH_PASSWORD_VALIDATORS`` ask of a new password, one line each."""
    return [str(text) for text in password_validation.password_validators_help_texts()]


def _bound_lengths(form: Any) -> None:
    """Every field of *form* refuses more than :data:`MAX_PASSWORD_LENGTH`.

    The length is a field error, found before ``check_password`` or any
    validator runs (a field's validators come first, and ``clean_<field>`` and
    the validators skip a field that has an error).
    """
    for form_field in form.fields.values():
        form_field.max_length = MAX_PASSWORD_LENGTH
        form_field.validators.append(MaxLengthValidator(MAX_PASSWORD_LENGTH))
        form_field.widget.attrs["maxlength"] = str(MAX_PASSWORD_LENGTH)


def _clean_new_passwords(form: Any) -> None:
    """Django's checks of the two new fields, the validators' refusals on the first
    (Django puts them on the second), once (``SetPasswordForm.clean`` is not called)."""
    form.validate_passwords(NEW1, NEW2)
    if not form.has_error(NEW1) and not form.has_error(NEW2):
        # Two different passwords, or one too long: that is said first.
        form.validate_password_for_user(form.user, NEW1)


if TYPE_CHECKING:
    _SetPasswordForm = SetPasswordForm[Any]
else:  # not subscriptable at run time
    _SetPasswordForm = SetPasswordForm


class SetForm(_SetPasswordForm):
    """Django's ``SetPasswordForm``, bounded: a first password for a user who has none."""

    def __init__(self, user: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(user, *args, **kwargs)
        _bound_lengths(self)

    def clean(self) -> dict[str, Any]:
        """The two new passwords, checked once."""
        _clean_new_passwords(self)
        return self.cleaned_data


class ChangeForm(PasswordChangeForm):
    """Django's ``PasswordChangeForm``, bounded: the current password, then the new one."""

    # Django says "old password"; the page's field is the current one.
    error_messages = {
        **PasswordChangeForm.error_messages,
        "password_incorrect": _("That is not your current password. Enter it again."),
    }

    def __init__(self, user: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(user, *args, **kwargs)
        _bound_lengths(self)
        self.fields[CURRENT].widget.attrs.pop("autofocus", None)  # the page decides the focus

    def clean(self) -> dict[str, Any]:
        """The two new passwords, checked once."""
        _clean_new_passwords(self)
        return self.cleaned_data


@dataclass(frozen=True, slots=True)
class Result:
    """What became of a change or a set.

    ``done``: the new password is saved (and :func:`password_changed` has run).
    Otherwise ``errors`` maps a field (``old_password``, ``new_password1``,
    ``new_password2``) to its messages; ``limited``: the rate limit refused the
    attempt (nothing was checked; ``retry_after`` seconds); ``stale``: the
    user's password is not what the form was for any more (it was changed, set
    or removed meanwhile: a set for a user who now has one is refused so).
    ``token``: for a bearer request, the session token the app uses from now on.
    """

    done: bool
    how: How
    errors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    limited: bool = False
    retry_after: int = 0
    stale: bool = False
    token: str | None = None


def _text(value: object) -> str:
    # What a form posts is a string; anything else counts as nothing typed.
    return value if isinstance(value, str) else ""


def stored_user(user: Any) -> Any:
    """*user* as stored now (the password it has at this moment), or ``None``."""
    try:
        return get_user_model()._default_manager.filter(pk=user.pk).first()
    except (AttributeError, TypeError, ValueError):
        return None


def _errors(form: Any) -> dict[str, tuple[str, ...]]:
    return {name: tuple(str(m) for m in messages) for name, messages in form.errors.items()}


@sensitive_variables("new")
def _save(request: HttpRequest, user: Any, expected: str | None, new: str, how: How) -> Result:
    """Write *new* as *user*'s password if the stored hash is still *expected*."""
    user.set_password(new)
    manager = get_user_model()._default_manager
    # Compare-and-set on the hash that was checked: a change or set made
    # meanwhile (another request, at the same moment) leaves nothing to update.
    written = manager.filter(pk=user.pk, password=expected).update(password=user.password)
    if written != 1:
        return Result(False, how, stale=True)
    # What AbstractBaseUser.save() would do once the new password is stored.
    password_validation.password_changed(new, user)
    user._password = None
    token = password_changed(request, user, how=how, keep_current=True)
    return Result(True, how, token=token)


@sensitive_variables("current", "new1", "new2", "data")
def change_password(
    request: HttpRequest, user: Any, current: object, new1: object, new2: object
) -> Result:
    """Change *user*'s password: *current* must be right, *new1* and *new2* the same
    and accepted by ``AUTH_PASSWORD_VALIDATORS``.

    *user* is the signed-in ``AUTH_USER_MODEL`` instance (``request.user``); its
    stored password is read again. A user without a usable password gets
    ``Result.stale`` (theirs is set, not changed: :func:`set_password`).
    """
    config = get_config()
    stored = stored_user(user)
    if stored is None or not has_password(stored):
        return Result(False, "change", stale=True)
    decision = ratelimit.hit(request, ACTION, user_id(stored), config=config)
    if not decision:
        return Result(False, "change", limited=True, retry_after=decision.retry_after)
    data = {CURRENT: _text(current), NEW1: _text(new1), NEW2: _text(new2)}
    form = ChangeForm(stored, data=data)
    valid = form.is_valid()
    if not form.has_error(CURRENT, "password_incorrect"):
        # The current password proved right (or was never tried: empty, too long):
        # only a wrong one stays counted.
        ratelimit.refund(decision)
    if not valid:
        return Result(False, "change", errors=_errors(form))
    # Read after the check: check_password() may have stored an upgraded hash.
    return _save(request, stored, stored.password, form.cleaned_data[NEW1], "change")


@sensitive_variables("new1", "new2", "data")
def set_password(request: HttpRequest, user: Any, new1: object, new2: object) -> Result:
    """Set a first password for *user*, who has no usable one: *new1* and *new2* the
    same and accepted by ``AUTH_PASSWORD_VALIDATORS``.

    A user who has a usable password gets ``Result.stale``: a password is
    changed only with the current one (:func:`change_password`).
    """
    config = get_config()
    stored = stored_user(user)
    if stored is None or has_password(stored):
        return Result(False, "set", stale=True)
    decision = ratelimit.hit(request, ACTION, user_id(stored), config=config)
    if not decision:
        return Result(False, "set", limited=True, retry_after=decision.retry_after)
    form = SetForm(stored, data={NEW1: _text(new1), NEW2: _text(new2)})
    if not form.is_valid():
        return Result(False, "set", errors=_errors(form))
    result = _save(request, stored, stored.password, form.cleaned_data[NEW1], "set")
    if result.done:
        ratelimit.refund(decision)
    return result


async def achange_password(
    request: HttpRequest, user: Any, current: object, new1: object, new2: object
) -> Result:
    """Async :func:`change_password`."""
    return await sync_to_async(change_password)(request, user, current, new1, new2)


async def aset_password(request: HttpRequest, user: Any, new1: object, new2: object) -> Result:
    """Async :func:`set_password`."""
    return await sync_to_async(set_password)(request, user, new1, new2)
