"""``manage.py example_setup``: create (or reset) the demo user. Safe to run again."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

USERNAME = "demo"
PASSWORD = "demo-password"


class Command(BaseCommand):
    help = "Create the demo user (a superuser, so the admin works too)."

    def handle(self, *args, **options):
        user, created = get_user_model().objects.get_or_create(
            username=USERNAME, defaults={"email": "demo@example.com", "first_name": "Demo"}
        )
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_password(PASSWORD)  # reset each time, so the printed password works
        user.save()
        self.stdout.write(f"Demo user: {USERNAME} / {PASSWORD}" + (" (created)" if created else ""))
