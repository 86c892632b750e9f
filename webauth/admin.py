"""Admin pages for webauth's tables: revoke sessions, unlink accounts, remove passkeys.

:class:`AccountInline` and :class:`PasskeyInline` list a user's linked accounts
and passkeys on the user's admin page. webauth's own user admin has them, and so
does Django's stock ``UserAdmin`` (webauth swaps in :class:`UserAdminWithSignIns`
when the user model's admin is exactly Django's); a project's own ``UserAdmin``
is left alone and can add them to its ``inlines``. A list that is empty, or that
the configuration does not fill (database sessions under the JWT strategy), says
why above it. WebAuthn challenges and user handles are not shown: a challenge
lives minutes and means nothing to a person, a handle is an opaque random string.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import BaseUserCreationForm
from django.contrib.auth.forms import UserChangeForm as DjangoUserChangeForm
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from .api_keys import ApiKeyError, check_new_key, create_key, owner_of, revoke
from .conf import Config, get_config
from .flows import providers_with
from .linked_accounts import LastSignInMethod, unlink
from .mfa.changes import announce
from .mfa.factors import reset
from .models import (
    Account,
    ApiKey,
    Authenticator,
    SecondFactor,
    Session,
    TokenSession,
    User,
    VerificationToken,
)
from .sessions import strategy_of

#: A row of the ways-in lists (an account, a passkey).
_Row = TypeVar("_Row")


class ExplainedChangeList(admin.ModelAdmin):
    """A changelist that says, above the list, why it is empty or unused.

    ``admin/webauth/change_list.html`` shows :meth:`explanation` when it returns one.
    """

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Every row is made by a sign-in (or the flows' storage), never by hand.
        return False

    def explanation(self, request: HttpRequest, config: Config) -> str | None:
        """What to tell staff about this list now, or ``None``: by default, while
        the table is empty, :meth:`when_empty`."""
        return self.when_empty(config) if self.is_empty(request) else None

    def when_empty(self, config: Config) -> str | None:
        """Why the table has no row yet (and how one gets there), or ``None``."""
        return None

    def is_empty(self, request: HttpRequest) -> bool:
        """Whether the table has no row at all (filters and search aside)."""
        return not self.get_queryset(request).exists()

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, object] | None = None
    ) -> HttpResponse:
        try:
            config = get_config()
        except ImproperlyConfigured:
            note = None  # the system checks say what is wrong
        else:
            note = self.explanation(request, config)
        if note:
            extra_context = {**(extra_context or {}), "webauth_explanation": note}
        return super().changelist_view(request, extra_context)


class _WaysInAdmin(ExplainedChangeList):
    """A user's ways to sign in (linked accounts, passkeys): removed only by the
    list's action, which keeps the "never the last way to sign in" rule that a
    plain delete would bypass."""

    # Each row is one user's: the list shows the user without a query per row.
    list_select_related = ("user",)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @staticmethod
    def remove_each(
        items: Iterable[_Row], remove: Callable[[_Row], object], shown: Callable[[_Row], str]
    ) -> tuple[int, list[str]]:
        """Remove each of *items* that is not its user's last way in.

        How many went, and how the kept ones are shown (the adapter refused each
        with ``LastSignInMethod``).
        """
        count, kept = 0, []
        for item in items:
            try:
                if remove(item):
                    count += 1
            except LastSignInMethod:
                kept.append(shown(item))
        return count, kept

    def report(self, request: HttpRequest, done: str, kept: str | None) -> None:
        """Say what the action removed, and (a warning) what it kept, if anything."""
        self.message_user(request, done, messages.SUCCESS)
        if kept is not None:
            self.message_user(request, kept, messages.WARNING)


@admin.register(Session)
class SessionAdmin(ExplainedChangeList):
    """Database sessions; the token itself is never shown (only its hash is stored)."""

    list_display = ("user", "created_at", "updated_at", "expires", "ip_address", "user_agent")
    list_filter = ("expires", "created_at")
    search_fields = ("user__pk", "ip_address", "user_agent")
    list_select_related = ("user",)
    readonly_fields = list_display
    exclude = ("token_hash",)
    actions = ("revoke",)
    date_hierarchy = "created_at"

    def explanation(self, request: HttpRequest, config: Config) -> str | None:
        if not strategy_of(config).stored:
            return gettext(
                "Sessions are kept in encrypted cookies (the JWT session strategy), so "
                "signed-in users are not listed here: this table holds sessions only with "
                "WEBAUTH['session']['strategy'] = 'database'. To end a user's sessions "
                "under the JWT strategy, deactivate the user or change their password."
            )
        if self.is_empty(request):
            return gettext(
                "Nobody is signed in. Each sign-in adds a session here; it goes at "
                "sign-out, when it expires, or when you revoke it (which signs that "
                "device out)."
            )
        return None

    @admin.action(description=_("Revoke the selected sessions (sign those devices out)"))
    def revoke(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        count, _unused = queryset.delete()
        self.message_user(
            request,
            ngettext("%(count)d session revoked.", "%(count)d sessions revoked.", count)
            % {"count": count},
            messages.SUCCESS,
        )


@admin.register(Account)
class AccountAdmin(_WaysInAdmin):
    """Linked provider accounts; tokens are not displayed."""

    list_display = ("user", "provider", "provider_account_id", "type", "created_at", "updated_at")
    list_filter = ("provider", "type")
    search_fields = ("provider_account_id", "provider", "user__pk")
    readonly_fields = list_display
    fields = (*readonly_fields, "scope", "expires_at")
    actions = ("unlink",)

    def when_empty(self, config: Config) -> str | None:
        return gettext(
            "No linked accounts yet. One is added when a user first signs in with an "
            "OAuth or OpenID provider, by email, or with a passkey; users who sign in "
            "with a password have none."
        )

    @admin.action(description=_("Unlink the selected accounts"))
    def unlink(self, request: HttpRequest, queryset: QuerySet[Account]) -> None:
        count, kept = self.remove_each(
            queryset.select_related("user"),
            lambda account: unlink(account.user, account.provider, account.provider_account_id),
            str,
        )
        done = ngettext("%(count)d account unlinked.", "%(count)d accounts unlinked.", count)
        note = _("Kept %(accounts)s: the only way those users can sign in.")
        kept_note = note % {"accounts": ", ".join(kept)} if kept else None
        self.report(request, done % {"count": count}, kept_note)


#: What a passkey's row shows: the name, when it was made and last used, and
#: whether it is synced (a multi-device credential, backed up).
PASSKEY_COLUMNS = (
    "name",
    "created_at",
    "last_used_at",
    "credential_device_type",
    "credential_backed_up",
)


@admin.register(Authenticator)
class AuthenticatorAdmin(_WaysInAdmin):
    """Registered passkeys: shown read-only, removed through the adapter's rule."""

    list_display = ("user", *PASSKEY_COLUMNS, "backup_eligible", "counter")
    list_filter = ("credential_device_type", "credential_backed_up", "backup_eligible")
    search_fields = ("credential_id", "name", "user__pk")
    ordering = ("user", "-created_at")
    readonly_fields = (
        "user",
        "name",
        "credential_id",
        "provider_account_id",
        "credential_public_key",
        "counter",
        "aaguid",
        "backup_eligible",
        "credential_backed_up",
        "credential_device_type",
        "transports",
        "created_at",
        "last_used_at",
    )
    actions = ("remove",)

    def when_empty(self, config: Config) -> str | None:
        if not providers_with(config.providers, "is_passkey"):
            return gettext(
                "No passkeys. Passkeys are off: WEBAUTH['providers'] has no Passkey "
                "provider (see docs/passkeys.md). With one, the passkeys users register "
                "are listed here."
            )
        return gettext(
            "No passkeys yet. One is added when a user creates an account with a "
            "passkey or adds one to their account (the passkeys page); remove them "
            "here with the action."
        )

    @admin.action(description=_("Remove the selected passkeys"))
    def remove(self, request: HttpRequest, queryset: QuerySet[Authenticator]) -> None:
        storage = get_config().storage
        count, kept = self.remove_each(
            queryset,
            lambda passkey: storage.delete_authenticator(
                str(passkey.user_id), passkey.credential_id
            ),
            lambda passkey: passkey.name or str(passkey),
        )
        done = ngettext("%(count)d passkey removed.", "%(count)d passkeys removed.", count)
        note = _("Kept %(passkeys)s: the only way those users can sign in.")
        kept_note = note % {"passkeys": ", ".join(kept)} if kept else None
        self.report(request, done % {"count": count}, kept_note)


class _ReadOnlyInline(admin.TabularInline):
    """Rows shown on the user's admin page, never added or deleted there; each links
    to its own list, whose actions keep a user's last way to sign in."""

    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class AccountInline(_ReadOnlyInline):
    """A user's linked accounts on the user's admin page: read-only, tokens never shown.

    Unlink them from the accounts list, whose action keeps a user's last way to
    sign in.
    """

    model = Account
    fields = ("provider", "type", "provider_account_id", "scope", "created_at")
    readonly_fields = fields
    ordering = ("created_at",)
    verbose_name = _("linked account")
    verbose_name_plural = _("linked accounts")


class PasskeyInline(_ReadOnlyInline):
    """A user's passkeys on the user's admin page (read-only; remove them from the
    passkeys list, which keeps a user's last way to sign in)."""

    model = Authenticator
    fields = PASSKEY_COLUMNS
    readonly_fields = PASSKEY_COLUMNS
    ordering = ("-created_at",)
    verbose_name = _("passkey")
    verbose_name_plural = _("passkeys")


class SecondFactorInline(_ReadOnlyInline):
    """A user's second factors on the user's admin page (read-only; the key is never
    shown). The user list's action resets them all."""

    model = SecondFactor
    fields = ("kind", "name", "confirmed", "created_at", "last_used_at")
    readonly_fields = fields
    ordering = ("created_at",)
    verbose_name = _("second factor")
    verbose_name_plural = _("second factors")
    show_change_link = False


@admin.action(description=_("Reset the two-step verification of the selected users"))
def reset_second_factors(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Any]
) -> None:
    """Remove the users' second factors and recovery codes (they lost their phone, say).

    Each reset sends the ``second_factor`` event with ``action="reset"`` and
    ``by`` the admin who did it. Under ``mfa.required`` the user adds a new key
    at their next sign-in.
    """
    config = get_config()
    count = 0
    for user in queryset:
        if reset(config, user):
            announce(config, user, "reset", request=request, by=request.user)
            count += 1
    modeladmin.message_user(
        request,
        ngettext(
            "The two-step verification of %(count)d user was reset.",
            "The two-step verification of %(count)d users was reset.",
            count,
        )
        % {"count": count},
        messages.SUCCESS,
    )


@admin.register(VerificationToken)
class VerificationTokenAdmin(ExplainedChangeList):
    """Pending email sign-in grants (link and code stored hashed; shown for support,
    never editable). The hashes are never shown."""

    list_display = ("identifier", "expires", "is_expired", "attempts")
    search_fields = ("identifier",)
    readonly_fields = ("identifier", "expires", "attempts")
    exclude = ("token_hash", "code_hash")

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(boolean=True, description=_("expired"))
    def is_expired(self, obj: VerificationToken) -> bool:
        return obj.expires <= timezone.now()

    def when_empty(self, config: Config) -> str | None:
        if not providers_with(config.providers, "sends_email"):
            return gettext(
                "No pending email sign-ins. Email sign-in is off: WEBAUTH['providers'] "
                "has no Email provider (see docs/email.md)."
            )
        return gettext(
            "No pending email sign-ins. One is added when someone asks for a sign-in "
            "link and code, and goes when it is used; expired ones are removed by "
            "manage.py webauth_purge."
        )


class ApiKeyAddForm(forms.ModelForm):
    """The admin's form for a new key: each problem :func:`check_new_key` finds is shown.

    A key is a user's or, with ``api_keys.owners``, an owner's (``"shop.team:42"``),
    never both.
    """

    class Meta:
        model = ApiKey
        fields = ("user", "owner", "name", "scopes", "expires")
        help_texts = {
            "owner": _(
                "Leave empty for a key of a user. For a key of another owner "
                "(WEBAUTH['api_keys']['owners']): its model label and primary key, such as "
                "“shop.team:42”."
            )
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        owner = (data.get("owner") or "").strip().lower()
        data["owner"] = owner
        if bool(data.get("user")) == bool(owner):
            raise ValidationError(gettext("Choose a user or an owner: one of the two."))
        if owner:
            found = owner_of(owner)
            if found is None:
                raise ValidationError(
                    gettext("No such owner: give a model of api_keys.owners and its key.")
                )
            data["owner_instance"] = found
        try:
            check_new_key(
                name=data.get("name"),
                scopes=data.get("scopes") or (),
                expires=data.get("expires") or True,
            )
        except ApiKeyError as exc:
            raise ValidationError(str(exc)) from None
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """API keys (docs/api-keys.md): made here (the key shown once), revoked here; the
    secret's hash is never shown and nothing else is editable."""

    list_display = (
        "name",
        "user",
        "owner",
        "key_id",
        "scopes",
        "created_at",
        "expires",
        "last_used_at",
    )
    list_filter = ("revoked_at", "expires", "created_at")
    search_fields = ("name", "key_id", "user__pk", "owner")
    list_select_related = ("user",)
    exclude = ("secret_hash",)
    actions = ("revoke",)
    raw_id_fields = ("user",)

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        if obj is None:
            return ["user", "owner", "name", "scopes", "expires"]
        return [
            "user",
            "owner",
            "name",
            "key_id",
            "scopes",
            "created_at",
            "expires",
            "last_used_at",
            "revoked_at",
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        return [] if obj is None else self.get_fields(request, obj)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, change, **kwargs)

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        # Shown, never edited: the revocation is an action.
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            return  # nothing but the revocation changes a key
        holder = form.cleaned_data.get("owner_instance") if obj.owner else obj.user
        try:
            made = create_key(
                holder,
                name=obj.name,
                scopes=obj.scopes or (),
                expires=obj.expires if obj.expires is not None else True,
                request=request,
            )
        except ApiKeyError as exc:  # max_keys reached since the form was checked
            self.message_user(request, str(exc), messages.ERROR)
            return
        stored = ApiKey.objects.get(key_id=made.record.key_id)
        obj.pk, obj.key_id, obj.created_at = stored.pk, stored.key_id, stored.created_at
        obj._webauth_new_key = made.key  # type: ignore[attr-defined]

    def response_add(self, request: HttpRequest, obj: ApiKey, post_url_continue: Any = None) -> Any:
        # The key is shown on this answer, once: never in a message, which a cookie
        # may carry back and forth.
        key = getattr(obj, "_webauth_new_key", None)
        if key is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("The new API key"),
            "key": key,
            "record": obj,
            "opts": self.model._meta,
            "changelist_url": reverse("admin:webauth_apikey_changelist"),
        }
        response = TemplateResponse(request, "admin/webauth/apikey_created.html", context)
        response["Cache-Control"] = "private, no-store"
        return response

    @admin.action(description=_("Revoke the selected API keys (at once, everywhere)"))
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = sum(
            revoke(str(key.user_id), key.key_id, owner=key.owner, request=request)
            for key in queryset
        )
        self.message_user(
            request,
            ngettext("%(count)d API key revoked.", "%(count)d API keys revoked.", count)
            % {"count": count},
            messages.SUCCESS,
        )


@admin.register(TokenSession)
class TokenSessionAdmin(ExplainedChangeList):
    """The sessions access tokens were minted for (docs/tokens.md): for support, never
    editable. Ending a session's tokens is done by ending the session."""

    list_display = ("sid", "user_id", "minted", "ended", "expires")
    list_filter = ("minted", "ended")
    search_fields = ("sid", "user_id")
    readonly_fields = list_display

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def when_empty(self, config: Config) -> str | None:
        if config.tokens is None:
            return gettext(
                "No access token sessions. Access tokens are off: WEBAUTH has no "
                "'tokens' section (see docs/tokens.md)."
            )
        return gettext(
            "No access token sessions yet. A session is added by its first access token "
            "and marked ended with the session, which the revocation feed then lists; "
            "manage.py webauth_purge removes it once its tokens have expired."
        )


class UserAdminWithSignIns(DjangoUserAdmin):
    """Django's ``UserAdmin`` with the user's linked accounts, passkeys and second
    factors below, and the action that resets the second factors."""

    inlines = (AccountInline, PasskeyInline, SecondFactorInline)
    actions = (reset_second_factors,)

    def get_inlines(self, request: HttpRequest, obj: object = None) -> Any:
        # A user being added has none (and the add form posts no formsets).
        return self.inlines if obj is not None else ()


def show_sign_ins_on_user_admin(site: admin.AdminSite | None = None) -> None:
    """Put :class:`UserAdminWithSignIns` in place of Django's stock user admin.

    Only when ``AUTH_USER_MODEL``'s admin is exactly
    ``django.contrib.auth.admin.UserAdmin``: a project that registered its own is
    left alone (it can add :class:`AccountInline` and :class:`PasskeyInline`).
    Called when this module is imported (it imports Django's auth admin, which
    registers ``auth.User``) and again from the app's ``ready()``, by when the
    admin (first in ``INSTALLED_APPS``, as usual) has also imported a project's
    module that registers its own user model with Django's ``UserAdmin``. Safe to
    call again.
    """
    site = site or admin.site
    model = get_user_model()
    if site.is_registered(model) and type(site.get_model_admin(model)) is DjangoUserAdmin:
        site.unregister(model)
        site.register(model, UserAdminWithSignIns)


if settings.AUTH_USER_MODEL == "webauth.User":

    class UserCreationForm(BaseUserCreationForm):
        """Add a user by email and password."""

        class Meta:
            model = User
            fields = ("email",)

    class UserChangeForm(DjangoUserChangeForm):
        """Edit a webauth user."""

        class Meta:
            model = User
            fields = "__all__"

    @admin.register(User)
    class UserAdmin(DjangoUserAdmin):
        """The admin for webauth's own user model (email instead of username)."""

        add_form = UserCreationForm
        form = UserChangeForm
        inlines = (AccountInline, PasskeyInline, SecondFactorInline)
        actions = (reset_second_factors,)

        ordering = ("email",)
        list_display = ("email", "name", "is_staff", "is_active", "date_joined")
        search_fields = ("email", "name")
        fieldsets = (
            (None, {"fields": ("email", "password")}),
            (_("Profile"), {"fields": ("name", "image", "email_verified")}),
            (
                _("Permissions"),
                {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")},
            ),
            (_("Important dates"), {"fields": ("last_login", "date_joined")}),
        )
        add_fieldsets = (
            (None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),
        )

        def get_inlines(self, request: HttpRequest, obj: object = None) -> Any:
            # A user being added has no passkeys (and the add form posts no formset).
            return self.inlines if obj is not None else ()


show_sign_ins_on_user_admin()
