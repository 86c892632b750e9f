"""The fleet site's email delivery: the sign-in link goes to Redis, not to SMTP.

``Email(send_verification_request="benchmarks.fleet.mail.send_verification_request")``
(docs/email.md, *Your own delivery function*). The load script asked for the
message, so it waits for the link in the list ``shared.MAILBOX + address`` and
opens it as the person would. One Redis round trip (``RPUSH`` and ``EXPIRE`` in a
pipeline), run before webauth answers, as a real delivery call would be.
"""

from __future__ import annotations

import redis

from benchmarks.fleet import shared

_redis = redis.Redis.from_url(shared.REDIS_URL)


def send_verification_request(*, identifier, url, token, code, expires, provider, theme, request):
    """Hand *url* to the load script; raise (so webauth voids the grant) if Redis fails."""
    key = shared.MAILBOX + identifier
    with _redis.pipeline(transaction=False) as pipe:
        pipe.rpush(key, url)
        pipe.expire(key, 3600)
        pipe.execute()
