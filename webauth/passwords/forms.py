"""The sign-up form: built from the user model, or the project's own (``passwords.signup.form``).

:func:`signup_form_class` is the class the sign-up page and the app route fill
in. By default it is :class:`SignupForm` on ``AUTH_USER_MODEL``: the model's
``USERNAME_FIELD``, its email field (``EMAIL_FIELD``, required here even where
the model allows a blank one), its ``REQUIRED_FIELDS``, and the password twice,
checked by ``AUTH_PASSWORD_VALIDATORS`` (Django's ``BaseUserCreationForm``
does that part). It works for Django's ``User``, for ``webauth.User`` and for
any model whose ``USERNAME_FIELD`` is the address.

A form never says that a username or an address is taken: the checks that
would (``validate_unique``, the model's unique constraints) are left out here
and decided by :mod:`webauth.passwords.signup`, which answers both cases
alike. A project's form (a dotted path) is used instead of the default, with
the same checks left out (:func:`signup_form_class` puts :class:`Undisclosing`
first in its bases); a ``clean_<field>`` of its own that looks for an existing
user would still tell, so it should not have one.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import BaseUserCreationForm, UsernameField
from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _

__all__ = [
    "FIELD_MAX_LENGTH",
    "PASSWORD_MAX_LENGTH",
    "SignupForm",
    "Undisclosing",
    "form_fields",
    "signup_form_class",
]

#: The longest password a sign-up takes (characters): far beyond any real one,
#: and short enough that the validators' work on it stays small.
PASSWORD_MAX_LENGTH = 4096

#: The longest value any field of the form takes before it is looked at
#: (a field of the model may allow less): no validator runs on a megabyte.
FIELD_MAX_LENGTH = 4096


if TYPE_CHECKING:
    _UserCreationForm = BaseUserCreationForm[Any]
else:  # not subscriptable at run time
    _UserCreationForm = BaseUserCreationForm


def _no_constraints(*args: object, **kwargs: object) -> None:
    """``Model.validate_constraints`` for a sign-up: no unique constraint is the form's to tell."""


class Undisclosing(forms.BaseForm):
    """What every sign-up form is built on: it tells nothing of existing users.

    ``validate_unique`` and the model's constraints would answer "a user with
    that username already exists"; the sign-up decides that case itself, out
    of sight. Values longer than :data:`FIELD_MAX_LENGTH` are refused before
    any field's own check.
    """

    def full_clean(self) -> None:
        """Refuse oversized values first, then clean as Django does."""
        if self.is_bound:
            too_long = [
                name
                for name in self.fields
                if len(str(self.data.get(self.add_prefix(name)) or "")) > FIELD_MAX_LENGTH
            ]
            if too_long:
                self._errors = forms.utils.ErrorDict()
                self.cleaned_data = {}
                for name in too_long:
                    self.add_error(name, _("This value is too long."))
                return
        super().full_clean()

    def validate_unique(self) -> None:
        """Nothing: whether the username or address is taken stays unsaid."""

    def _post_clean(self) -> None:
        instance = getattr(self, "instance", None)
        if instance is not None:
            # full_clean() would run the model's unique constraints, which ask
            # the database whether such a user exists (and say so).
            instance.validate_constraints = _no_constraints
        try:
            super()._post_clean()  # type: ignore[misc]
        finally:
            if instance is not None:
                del instance.validate_constraints


class SignupForm(Undisclosing, _UserCreationForm):
    """A new user: username (or address), address, the model's required fields, a password twice.

    Made for the project's user model by :func:`signup_form_class`; subclass
    it for a form of your own (``passwords.signup.form``).
    """

    password1 = forms.CharField(
        label=_("Password"),
        strip=False,
        max_length=PASSWORD_MAX_LENGTH,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    password2 = forms.CharField(
        label=_("Password (again)"),
        strip=False,
        max_length=PASSWORD_MAX_LENGTH,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=_("Enter the same password as before, for verification."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model = self._meta.model
        email_field = model.get_email_field_name()
        if email_field in self.fields:
            field = self.fields[email_field]
            field.required = True  # the address is how the account is proven
            field.widget.attrs["autocomplete"] = "email"
        username = self.fields.get(model.USERNAME_FIELD)
        if username is not None:
            username.widget.attrs.pop("autofocus", None)  # the page focuses its first field
            if email_field != model.USERNAME_FIELD:
                username.widget.attrs.setdefault("autocomplete", "username")


def form_fields(model: Any) -> list[str]:
    """The model fields a sign-up asks for: ``USERNAME_FIELD``, the address, ``REQUIRED_FIELDS``."""
    names = [model.USERNAME_FIELD, model.get_email_field_name(), *model.REQUIRED_FIELDS]
    return list(dict.fromkeys(names))


@cache
def _default_form(model: Any) -> type[SignupForm]:
    field_classes = {}
    if model.get_email_field_name() != model.USERNAME_FIELD:
        field_classes[model.USERNAME_FIELD] = UsernameField
    meta = type(
        "Meta", (), {"model": model, "fields": form_fields(model), "field_classes": field_classes}
    )
    attrs = {"Meta": meta, "__module__": __name__}
    return cast("type[SignupForm]", type("SignupForm", (SignupForm,), attrs))


@cache
def _project_form(path: str) -> type[forms.BaseForm]:
    form = import_string(path)
    if not isinstance(form, type) or not issubclass(form, forms.BaseForm):
        raise TypeError(f"{path} is not a form class")
    if issubclass(form, Undisclosing):
        return form
    return cast("type[forms.BaseForm]", type(form.__name__, (Undisclosing, form), {}))


def signup_form_class(path: str | None) -> type[forms.BaseForm]:
    """The sign-up form: the project's class at *path*, else the one built from the user model.

    Raises ``ImportError`` or ``TypeError`` for a *path* that names no form
    class (the system check ``webauth.E015`` says so at start-up).
    """
    if path:
        return _project_form(path)
    return _default_form(get_user_model())
