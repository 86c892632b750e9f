"""The fleet benchmark's load: people using a webauth site, for ``benchmarks/bench_fleet.py``.

Each simulated user is a *person*: one of the accounts, in one browser (its own
cookie jar, kept by hand so that every cookie is seen) and one app (a bearer
session). A person arrives already signed in: the driver made a browser session
and an app session for every account before the run. The tasks, by weight:

===  =====================================================================
 70  a page that reads ``request.user`` (``GET /whoami``): the username must
     be the person's
 15  ``GET /auth/session``: the person's session, the same token re-sent
  5  a password sign-in as a browser does it: ``GET /auth/csrf``, then the
     form's ``POST /auth/callback/credentials`` with ``csrfToken`` (the real
     hasher); a 302 to the callback URL and a new session cookie. Half of them
     from a new device (a fresh cookie jar: the old session stays, as another
     device's), half in the same browser (webauth ends the session the cookie
     held: recorded as ended)
  3  a sign-out: ``GET /auth/csrf``, ``POST /auth/signout``; the cookie is
     deleted. The person leaves and another arrives (the next account)
  3  an email sign-in: ``GET /auth/csrf``, ``POST /auth/signin/email``, the link
     taken from Redis (``benchmarks/fleet/mail.py`` put it there), ``GET`` of the
     link (the confirmation page, ``confirm_link``), ``POST`` of its form: a 302
     to the callback URL and a new session cookie. New device or same browser
     as above
  2  an app's bearer session refresh, ``POST /auth/app/session``
  2  an access token minted for the session, ``GET /auth/token``
===  =====================================================================

Every request is named ``"<METHOD> <path>"``, as the site's query counter keys it.
Records, in Redis (``benchmarks/fleet/shared.py``): every session token the
script got and every one it ended, by account; a snapshot of the browser (its
cookies and the confirmation form) before each link is redeemed, for the
driver to try again; and, in a JSON file per process, the end time, name,
duration and outcome of every request, and the failures. After the warm-up
(``WEBAUTH_FLEET_WARMUP`` seconds) it resets locust's statistics and records
the start of the measured window and, ``WEBAUTH_FLEET_DURATION`` seconds later,
its end, each with the site's counters at that moment (the driver gives locust
a few seconds more than that). ``WEBAUTH_FLEET_RATE``
paces the tasks (all users together, per second); unset, no user waits.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

import gevent
import redis
from locust import FastHttpUser, constant, constant_throughput, events, task
from locust.runners import WorkerRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.fleet import shared

SESSION_COOKIE = "authjs.session-token"
PENDING_COOKIE = "authjs.email-pending"
AUDIENCE = "fleet-api"
WARMUP = float(os.environ.get("WEBAUTH_FLEET_WARMUP", "10"))
DURATION = float(os.environ.get("WEBAUTH_FLEET_DURATION", "60"))
OUT = os.environ.get("WEBAUTH_FLEET_OUT", ".")
#: Tasks per second of all simulated users together (``WEBAUTH_FLEET_RATE``), or 0:
#: none waits (a closed loop: as fast as the fleet answers).
RATE = float(os.environ.get("WEBAUTH_FLEET_RATE", "0"))
USERS = int(os.environ.get("WEBAUTH_FLEET_USERS", "1"))
#: The share of sign-ins made from a new device (a fresh cookie jar).
NEW_DEVICE = 0.5


class _Redis:
    """One client per process (locust ``--processes`` forks after the import)."""

    def __init__(self) -> None:
        self._pid, self._client = 0, None

    def __getattr__(self, name: str) -> object:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._client = redis.Redis.from_url(shared.REDIS_URL, decode_responses=True)
        return getattr(self._client, name)


_redis = _Redis()
_records: list[tuple[float, str, float, bool]] = []
_failures: Counter[tuple[str, str]] = Counter()
_HIDDEN = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)">')
_ACTION = re.compile(r'<form id="webauth-email-confirm-form"[^>]* action="([^"]+)"')


@events.request.add_listener
def _record(name: str, response_time: float, exception: object = None, **_: object) -> None:
    _records.append((time.time(), name, response_time, exception is None))
    if exception is not None:
        _failures[(name, str(exception)[:300])] += 1


def _snapshot() -> dict[str, dict[str, str]]:
    with _redis.pipeline(transaction=False) as pipe:
        pipe.hgetall(shared.REQUESTS)
        pipe.hgetall(shared.QUERIES)
        pipe.hgetall(shared.REDIS_CALLS)
        pipe.hgetall(shared.TRANSACTIONS)
        requests, queries, calls, transactions = pipe.execute()
    return {"requests": requests, "queries": queries, "redis": calls, "transactions": transactions}


def _window(environment: object) -> None:
    """Mark the measured window, after the warm-up (locust's own stats restart there)."""
    gevent.sleep(WARMUP)
    environment.stats.reset_all()  # type: ignore[attr-defined]
    start = time.time()
    _redis.hset(shared.WINDOW, mapping={"start": start, "start_counts": json.dumps(_snapshot())})
    gevent.sleep(max(0.0, start + DURATION - time.time()))
    _redis.hset(shared.WINDOW, mapping={"end": time.time(), "end_counts": json.dumps(_snapshot())})


@events.test_start.add_listener
def _on_test_start(environment: object, **_: object) -> None:
    if not isinstance(environment.runner, WorkerRunner):  # type: ignore[attr-defined]
        gevent.spawn(_window, environment)


@events.quitting.add_listener
def _dump(**_: object) -> None:
    path = Path(OUT) / f"records-{os.getpid()}.json"
    failures = [[name, message, count] for (name, message), count in _failures.items()]
    path.write_text(json.dumps({"records": _records, "failures": failures}))


def _cookie_of(header: str) -> tuple[str, str, bool]:
    """``(name, value, deleted)`` of one ``Set-Cookie`` header."""
    pair, _, attributes = header.partition(";")
    name, _, value = pair.strip().partition("=")
    deleted = value == "" or "max-age=0" in attributes.lower().replace(" ", "")
    return name, value, deleted


class Person(FastHttpUser):
    """One person at a time: an account, a browser (cookie jar) and an app token."""

    wait_time = constant_throughput(RATE / USERS) if RATE else constant(0)

    def on_start(self) -> None:
        self.client.client.cookiejar = None  # the cookies are kept by hand (self.jar)
        self.arrive()

    # -- who, and what they hold ------------------------------------------------------------

    def arrive(self) -> None:
        """Become the next person: an account no other simulated user holds."""
        number = _redis.incr(shared.PERSONS) - 1
        self.account = shared.account_of(number)
        self.username = shared.username(self.account)
        self.address = shared.address(self.account)
        self.app_token = shared.session_token("app", self.account)
        self.jar: dict[str, str] = {}
        self.session: str | None = None
        if number < shared.ACCOUNTS:  # else its browser session may have been ended
            self.session = shared.session_token("browser", self.account)
            self.jar[SESSION_COOKIE] = self.session

    def new_device(self) -> None:
        """A fresh browser: the old one's session (if any) stays, as another device's."""
        self.jar = {}
        self.session = None

    def headers(self, **extra: str) -> dict[str, str]:
        headers = dict(extra)
        if self.jar:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.jar.items())
        return headers

    def keep_cookies(self, response: object, keep: bool = True) -> dict[str, str]:
        """The cookies the response sets (``""``: deleted), applied to the jar if *keep*."""
        set_now: dict[str, str] = {}
        for header in response.headers.getlist("set-cookie"):  # type: ignore[attr-defined]
            name, value, deleted = _cookie_of(header)
            set_now[name] = "" if deleted else value
            if keep and deleted:
                self.jar.pop(name, None)
            elif keep:
                self.jar[name] = value
        return set_now

    @property
    def callback_url(self) -> str:
        return f"{self.host}/whoami"

    # -- one request ------------------------------------------------------------------------

    def call(self, method: str, path: str, expect: int, check=None, browser: bool = True, **kwargs):
        """One request named ``"<METHOD> <path>"``; the response, or ``None`` if it failed.

        *check(response, cookies)* gets the cookies the answer set (``""``: deleted)
        and returns an error message, or ``None`` when all is well. *browser*:
        send the jar and keep what the answer sets (else, as an app: neither).
        """
        name = f"{method} {path.partition('?')[0]}"
        extra = kwargs.pop("headers", {})
        headers = self.headers(**extra) if browser else extra
        with self.client.request(
            method,
            path,
            name=name,
            headers=headers,
            allow_redirects=False,
            catch_response=True,
            **kwargs,
        ) as response:
            if response.status_code != expect:
                response.failure(f"status {response.status_code}, expected {expect}")
                return None
            cookies = self.keep_cookies(response, keep=browser)
            problem = check(response, cookies) if check is not None else None
            if problem:
                response.failure(problem)
                return None
            response.success()
            return response

    def csrf_token(self) -> str | None:
        response = self.call("GET", "/auth/csrf", 200)
        return None if response is None else response.json()["csrfToken"]

    def signed_in(self, response: object, cookies: dict[str, str], via: str) -> str | None:
        """Check a sign-in's answer; record the session it made and the one it ended."""
        location = response.headers.get("location")  # type: ignore[attr-defined]
        if location != self.callback_url:
            return f"{via}: redirected to {location!r}, not the callback URL"
        token = cookies.get(SESSION_COOKIE)
        if not token:
            return f"{via}: no session cookie"
        with _redis.pipeline(transaction=False) as pipe:
            pipe.sadd(shared.CREATED, f"{self.account} {token}")
            if self.session is not None:  # the cookie's session ends with the sign-in
                pipe.sadd(shared.ENDED, f"{self.account} {self.session}")
            pipe.execute()
        self.session = token
        return None

    def ensure_session(self) -> bool:
        if self.session is None:
            self.sign_in_with_password(device="same")
        return self.session is not None

    # -- the tasks --------------------------------------------------------------------------

    @task(70)
    def page(self) -> None:
        if not self.ensure_session():
            return

        def check(response: object, cookies: dict[str, str]) -> str | None:
            if response.text != self.username:  # type: ignore[attr-defined]
                return f"request.user is {response.text!r}, not {self.username!r}"  # type: ignore[attr-defined]
            return None

        self.call("GET", "/whoami", 200, check)

    @task(15)
    def session_json(self) -> None:
        if not self.ensure_session():
            return

        def check(response: object, cookies: dict[str, str]) -> str | None:
            body = response.json()  # type: ignore[attr-defined]
            if not body or body.get("user", {}).get("email") != self.address:
                return f"the session is {body!r}, not {self.address!r}'s"
            if cookies.get(SESSION_COOKIE) != self.session:
                return "the session cookie was not re-sent unchanged"
            return None

        self.call("GET", "/auth/session", 200, check)

    @task(5)
    def sign_in_with_password(self, device: str | None = None) -> None:
        if (device or ("new" if random.random() < NEW_DEVICE else "same")) == "new":
            self.new_device()
        token = self.csrf_token()
        if token is None:
            return
        form = {
            "username": self.username,
            "password": shared.PASSWORD,
            "csrfToken": token,
            "callbackUrl": self.callback_url,
        }
        self.call(
            "POST",
            "/auth/callback/credentials",
            302,
            lambda response, cookies: self.signed_in(response, cookies, "credentials"),
            data=form,
        )

    @task(3)
    def sign_out(self) -> None:
        if not self.ensure_session():
            return
        token = self.csrf_token()
        if token is None:
            return

        def check(response: object, cookies: dict[str, str]) -> str | None:
            if cookies.get(SESSION_COOKIE) != "":
                return "the session cookie was not deleted"
            _redis.sadd(shared.ENDED, f"{self.account} {self.session}")
            return None

        form = {"csrfToken": token, "callbackUrl": self.callback_url}
        if self.call("POST", "/auth/signout", 302, check, data=form) is not None:
            self.arrive()  # someone else now

    @task(3)
    def sign_in_with_email(self) -> None:
        if random.random() < NEW_DEVICE:
            self.new_device()
        token = self.csrf_token()
        if token is None:
            return
        mailbox = shared.MAILBOX + self.address
        _redis.delete(mailbox)

        def asked(response: object, cookies: dict[str, str]) -> str | None:
            if "/auth/verify-request" not in response.headers.get("location", ""):  # type: ignore[attr-defined]
                return f"redirected to {response.headers.get('location')!r}"  # type: ignore[attr-defined]
            if not cookies.get(PENDING_COOKIE):
                return "no pending cookie"
            return None

        form = {"email": self.address, "csrfToken": token, "callbackUrl": self.callback_url}
        if self.call("POST", "/auth/signin/email", 302, asked, data=form) is None:
            return
        _redis.incr(shared.EMAIL_ASKED)
        delivered = _redis.blpop([mailbox], timeout=10)
        if delivered is None:
            events.request.fire(
                request_type="MAIL",
                name="mail delivered",
                response_time=10_000,
                response_length=0,
                exception=RuntimeError("no sign-in link in Redis after 10 s"),
            )
            return
        link = delivered[1]
        path = link[len(self.host) :]
        page: dict[str, object] = {}

        def confirmation(response: object, cookies: dict[str, str]) -> str | None:
            text = response.text  # type: ignore[attr-defined]
            action = _ACTION.search(text)
            if action is None:
                return "no confirmation form"
            page["action"] = action.group(1)
            page["fields"] = dict(_HIDDEN.findall(text))
            return None

        if self.call("GET", path, 200, confirmation) is None:
            return
        action = str(page["action"])
        snapshot = {
            "account": self.account,
            "path": action[len(self.host) :],
            "fields": page["fields"],
            "cookies": dict(self.jar),
        }
        response = self.call(
            "POST",
            action[len(self.host) :],
            302,
            lambda response, cookies: self.signed_in(response, cookies, "email"),
            data=page["fields"],
        )
        if response is not None:
            with _redis.pipeline(transaction=False) as pipe:
                pipe.rpush(shared.LINKS, json.dumps(snapshot))
                pipe.incr(shared.EMAIL_USED)
                pipe.execute()

    @task(2)
    def refresh_app_session(self) -> None:
        def check(response: object, cookies: dict[str, str]) -> str | None:
            body = response.json()  # type: ignore[attr-defined]
            if body.get("sessionToken") != self.app_token:
                return "the refreshed bearer token is not the app's token"
            if cookies:
                return f"a bearer answer set cookies: {sorted(cookies)}"
            return None

        # An app keeps no cookies: the jar is neither sent nor filled.
        self.call(
            "POST",
            "/auth/app/session",
            200,
            check,
            browser=False,
            headers={"Authorization": f"Bearer {self.app_token}"},
        )

    @task(2)
    def access_token(self) -> None:
        if not self.ensure_session():
            return

        def check(response: object, cookies: dict[str, str]) -> str | None:
            body = response.json()  # type: ignore[attr-defined]
            if not body.get("access_token") or body.get("audience") != AUDIENCE:
                return f"no access token: {body!r}"
            return None

        self.call("GET", f"/auth/token?audience={AUDIENCE}", 200, check)
