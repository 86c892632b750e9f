"""``manage.py webauth_tokenkey``: a new signing key for access tokens, and where it goes.

Prints a private JWK (one line of JSON) on standard output and, on standard
error, the settings that read it from the environment, so that
``manage.py webauth_tokenkey > key.json`` keeps only the key. The key is never
written anywhere else (docs/tokens.md, "Keys and rotation").
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...tokens.keys import ALGORITHMS, KeyProblem, generate

SNIPPET = """\
Keep the key out of the code (a secret manager, or an environment variable):

    export WEBAUTH_TOKEN_KEY='<the line above>'

and read it in settings.py, the new key first, the previous one after it until
its last token has expired (tokens.max_age after the switch):

    WEBAUTH = {{
        ...,
        "tokens": {{
            "keys": [os.environ["WEBAUTH_TOKEN_KEY"]],
            "audiences": ["https://api.example.com"],
        }},
    }}

kid: {kid}   alg: {alg}
"""


class Command(BaseCommand):
    help = (
        "Generate a private key that signs webauth's access tokens (a JWK on standard "
        "output) and print the settings that use it (on standard error)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--alg",
            default="ES256",
            choices=list(ALGORITHMS),
            help="The signing algorithm (default ES256; EdDSA is smaller, RS256 is for "
            "verifiers that know only RSA).",
        )
        parser.add_argument(
            "--kid",
            default=None,
            help="The key's id (default: the date and the key's thumbprint, e.g. "
            "2026-12-02-Ab3dE).",
        )

    def handle(self, *args: object, **options: Any) -> None:
        alg: str = options["alg"]
        kid: str | None = options["kid"]
        if kid is not None and not (0 < len(kid) <= 100 and kid.isprintable()):
            raise CommandError("--kid must be 1 to 100 printable characters")
        try:
            key = generate(alg, kid=kid)
        except KeyProblem as exc:  # pragma: no cover - argparse's choices refuse first
            raise CommandError(str(exc)) from None
        if kid is None:
            # A readable id that says when the key was made, unique by its thumbprint.
            kid = f"{datetime.now(UTC):%Y-%m-%d}-{key.thumbprint()[:8]}"
            key.update(kid=kid)
        self.stdout.write(key.export(private_key=True))
        self.stderr.write(SNIPPET.format(kid=kid, alg=alg), ending="")
