"""The app config: registers the system checks, the settings reload, the logout hook,
the second factor's sign-in step, the access tokens' session ends and the cached
session check's revocations, and puts the
linked accounts and passkeys on Django's stock user admin."""

from django.apps import AppConfig, apps
from django.utils.translation import gettext_lazy as _


class WebauthConfig(AppConfig):
    name = "webauth"
    verbose_name = _("Web authentication")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, once the app registry is ready: these modules (through
        # django.contrib.auth) import models, which an app's module cannot at import.
        from django.contrib.auth.signals import user_logged_out
        from django.core.signals import setting_changed

        from . import checks  # noqa: F401  (registers the checks)
        from .conf import reset_config
        from .middleware import end_on_django_logout
        from .state import forget_validated_hosts
        from .utils import forget_user_model

        setting_changed.connect(reset_config, dispatch_uid="webauth.reset_config")
        setting_changed.connect(forget_user_model, dispatch_uid="webauth.user_model")
        setting_changed.connect(forget_validated_hosts, dispatch_uid="webauth.validated_hosts")
        user_logged_out.connect(end_on_django_logout, dispatch_uid="webauth.django_logout")
        self._connect_token_sessions()
        # Keys of project-defined owners (WEBAUTH["api_keys"]["owners"]) are deleted
        # with their owner. Imported here, once the app registry is ready:
        # webauth.api_keys reads the configuration, which waits for it.
        from .api_keys import watch_owners

        watch_owners()
        setting_changed.connect(watch_owners, dispatch_uid="webauth.api_key_owners")
        # The second factor's step, asked after every sign-in's first factor (it asks
        # nothing unless WEBAUTH["mfa"]["enabled"] and the user has one). Imported
        # here too: webauth.mfa reads models, which wait for the app registry.
        from .flows.steps import STEPS
        from .mfa.step import SECOND_FACTOR

        if SECOND_FACTOR not in STEPS:
            STEPS.append(SECOND_FACTOR)
        if apps.is_installed("django.contrib.admin"):
            # Also done when webauth.admin is first imported. By now the admin
            # (first in INSTALLED_APPS, as startproject puts it) has imported every
            # app's admin module, a project's that registers its own user model
            # with Django's UserAdmin included. Imported here: webauth.admin
            # imports models, which must wait for the app registry.
            from .admin import show_sign_ins_on_user_admin

            show_sign_ins_on_user_admin()

    @staticmethod
    def _connect_token_sessions() -> None:
        # Access tokens (WEBAUTH["tokens"]): a password saved, a user deactivated
        # or deleted, a database session row deleted by any ORM call end the
        # sessions' tokens (webauth.tokens.ended; each receiver returns at once
        # while tokens are off). The user model by its label, as Django resolves
        # a lazy sender, so a project's own model is the one watched. Imported here:
        # webauth.tokens.ended reads the configuration, which waits for the app registry.
        from django.conf import settings
        from django.db.models.signals import post_delete, post_save

        from .tokens import ended

        user_model = settings.AUTH_USER_MODEL
        post_save.connect(ended.user_saved, sender=user_model, dispatch_uid="webauth.token_user")
        post_delete.connect(
            ended.user_deleted, sender=user_model, dispatch_uid="webauth.token_user_deleted"
        )
        # The Session rows' receiver only while tokens are configured: any post_delete
        # receiver makes Django read the rows before deleting them (no fast delete),
        # one more query per sign-out of every site that has no tokens.
        ended.watch_session_rows()
        from django.core.signals import setting_changed

        setting_changed.connect(ended.watch_session_rows, dispatch_uid="webauth.token_rows")
        # The cached session check (WEBAUTH["session"]["user_check_cache"]): any save
        # or deletion of a user revokes what is remembered of it (a no-op while off).
        # Imported here like the others: the sessions package waits for the app registry.
        from .sessions.check_cache import revoke_on_change

        post_save.connect(revoke_on_change, sender=user_model, dispatch_uid="webauth.check_save")
        post_delete.connect(
            revoke_on_change, sender=user_model, dispatch_uid="webauth.check_delete"
        )
