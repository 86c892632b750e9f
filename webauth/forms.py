"""Forms behind :func:`webauth.sign_in` and :func:`webauth.sign_out`.

Their results follow the spec's form actions: ``failed``, ``field_errors`` and
``form_errors`` are all ``None`` on success; on failure ``failed`` is true.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from django import forms
from django.utils.translation import gettext_lazy as _

from .conf import get_config

__all__ = ["FormResult", "SignInForm", "SignOutForm"]


@dataclass(slots=True)
class FormResult:
    """What a sign-in or sign-out action returns when it does not redirect."""

    failed: bool | None = None
    field_errors: dict[str, list[str]] | None = None
    form_errors: list[str] | None = None
    error: BaseException | None = field(default=None, repr=False)

    @classmethod
    def from_form(cls, form: forms.Form) -> FormResult:
        errors = {k: [str(m) for m in v] for k, v in form.errors.items() if k != "__all__"}
        return cls(
            failed=True,
            field_errors=errors,
            form_errors=[str(m) for m in form.non_field_errors()],
        )

    @classmethod
    def failure(cls, message: str, error: BaseException | None = None) -> FormResult:
        return cls(failed=True, field_errors={}, form_errors=[message], error=error)


class _MappingField(forms.Field):
    """Accepts a mapping (or nothing)."""

    default_error_messages = {"invalid": _("Enter a mapping of names to values.")}

    def to_python(self, value: Any) -> dict[str, object]:
        if value in (None, ""):
            return {}
        if not isinstance(value, Mapping):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return dict(value)


class _ParamsField(forms.Field):
    """``authorization_params``: a query string, a mapping of strings, or pairs."""

    default_error_messages = {"invalid": _("Enter a query string or a mapping of strings.")}

    def to_python(self, value: Any) -> dict[str, str]:
        if value in (None, ""):
            return {}
        if isinstance(value, str):
            return dict(parse_qsl(value.lstrip("?"), keep_blank_values=True))
        items = value.items() if isinstance(value, Mapping) else value
        try:
            out = {str(k): v for k, v in items}
        except (TypeError, ValueError) as exc:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from exc
        if not all(isinstance(v, str) for v in out.values()):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return out


class SignInForm(forms.Form):
    """Validates :func:`webauth.sign_in`'s arguments."""

    provider_id = forms.CharField(max_length=100)
    redirect_to = forms.CharField(required=False, max_length=4096)
    options = _MappingField(required=False)
    authorization_params = _ParamsField(required=False)

    def clean_provider_id(self) -> str:
        value: str = self.cleaned_data["provider_id"]
        if get_config().get_provider(value) is None:
            raise forms.ValidationError(_("Unknown provider."), code="unknown_provider")
        return value


class SignOutForm(forms.Form):
    """Validates :func:`webauth.sign_out`'s arguments."""

    redirect_to = forms.CharField(required=False, max_length=4096)
