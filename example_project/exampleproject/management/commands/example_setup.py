"""``manage.py example_setup``: the demo user and the bundled Example IdP. Safe to run again."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

USERNAME = "demo"
PASSWORD = "demo-password"
IDP_USERNAME = "idp-alice"
IDP_PASSWORD = "idp-password"


class Command(BaseCommand):
    help = "Create the demo user (a superuser) and register the Example IdP's client."

    def handle(self, *args, **options):
        users = get_user_model().objects
        user, created = users.get_or_create(
            username=USERNAME, defaults={"email": "demo@example.com", "first_name": "Demo"}
        )
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(PASSWORD)  # reset each time, so the printed password works
        user.save()
        self.stdout.write(f"Demo user: {USERNAME} / {PASSWORD}" + (" (created)" if created else ""))
        self._idp(users)
        self.stdout.write(self._sessions())

    def _sessions(self) -> str:
        """Where sessions live (settings.SESSION_STRATEGY), and how to pick the other."""
        if settings.SESSION_STRATEGY == "database":
            return (
                "Sessions: in the database (WEBAUTH_EXAMPLE_SESSIONS=database): the account\n"
                "center lists them and signs out everywhere else"
            )
        return (
            "Sessions: JWT cookies; WEBAUTH_EXAMPLE_SESSIONS=database ./scripts/example\n"
            "keeps them in the database, to sign out everywhere from the account center"
        )

    def _idp(self, users):
        """The IdP's own user and the OAuth client webauth uses (see settings.WEBAUTH)."""
        from oauth2_provider.models import get_application_model

        from webauth.models import Account

        idp_user, _ = users.get_or_create(
            username=IDP_USERNAME,
            defaults={"first_name": "Alice", "last_name": "Example"},
        )
        idp_user.email = f"{IDP_USERNAME}@idp.example"  # what the IdP says (idp.py)
        idp_user.set_password(IDP_PASSWORD)
        idp_user.save()
        provider = next(
            p for p in settings.WEBAUTH["providers"] if getattr(p, "id", "") == "example-idp"
        )
        # The IdP shares this project's user table, so the person who logs in to it
        # as idp-alice already is a user of the site: link the IdP account (its
        # subject is the user's primary key, as django-oauth-toolkit says) to that
        # user, and "Sign in with Example IdP" lands on idp-alice. Without the link,
        # webauth would create a second user for the same person (a real IdP is a
        # separate system, where that is what should happen). update_or_create
        # also moves a link that an older run of the example gave such a user.
        Account.objects.update_or_create(
            provider=provider.id,
            provider_account_id=str(idp_user.pk),
            defaults={"user": idp_user, "type": provider.type},
        )
        # The callback URL on every host the site answers to (settings.ALLOWED_HOSTS),
        # so that the sign-in works whether the site is opened as localhost or
        # 127.0.0.1: webauth sends the callback on the host the request came to.
        redirect_uris = [
            f"http://{host}:{settings.PORT}/auth/callback/{provider.id}"
            for host in settings.ALLOWED_HOSTS
        ]
        application, _ = get_application_model().objects.get_or_create(
            client_id=provider.client_id, defaults={"user": idp_user}
        )
        application.name = "webauth example project"
        application.client_secret = provider.client_secret  # hashed on save
        application.client_type = "confidential"
        application.authorization_grant_type = "authorization-code"
        application.redirect_uris = " ".join(redirect_uris)
        application.algorithm = "RS256"
        application.skip_authorization = True
        application.save()
        self.stdout.write(f"Example IdP user: {IDP_USERNAME} / {IDP_PASSWORD}")
