"""Which of ``name``, ``email`` and ``image`` a session's user carries (issue 13, point 11).

Auth.js's default ``jwt`` callback copies ``user.name``, ``user.email`` and
``user.image`` into the token's ``name``, ``email`` and ``picture``: a member the
user does not have is ``undefined`` and does not survive JSON, a ``null`` one
does. So, under JWT sessions, a field the signed-in user's record does not have
is left out of ``GET /auth/session`` (and of the session update), and a field
that is null stays null. Under the database strategy the user is a row, which
always has the column: null is sent in both cases.
"""

import pytest
from django.contrib.auth import get_user_model

from webauth import jwt as jose
from webauth.flows.oauth import _user_data
from webauth.providers import Credentials
from webauth.providers.oauth import OAuth2
from webauth.sessions import default_token
from webauth.test import force_sign_in
from webauth.utils import user_to_dict

from .support.helpers import csrf_pair

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
pytestmark = pytest.mark.django_db

USERS = {
    "no-image": {"id": "u1", "name": "Ann", "email": "ann@example.com"},
    "null-image": {"id": "u2", "name": "Bob", "email": "bob@example.com", "image": None},
    "only-id": {"id": "u3"},
    "with-image": {"id": "u4", "name": "Cy", "email": None, "image": "https://img/cy"},
}


def authorize(credentials, request):
    return dict(USERS[credentials["who"]])


@pytest.fixture
def site(settings):
    def configure(**extra):
        settings.WEBAUTH = {
            **settings.WEBAUTH,
            "providers": [
                Credentials(id="who", credentials={"who": {"label": "Who"}}, authorize=authorize),
                "webauth.providers.DjangoCredentials",
            ],
            **extra,
        }

    configure()
    return configure


def sign_in(client, who):
    response = client.post("/auth/callback/who", {"csrfToken": csrf_pair(client), "who": who})
    assert response.status_code == 302
    assert response["Location"] == "http://testserver"
    return response


def claims_of(response):
    return jose.decode(
        token=response.cookies["authjs.session-token"].value,
        secret=SECRET,
        salt="authjs.session-token",
    )


def updated_session(client, data=None):
    response = client.post(
        "/auth/session",
        {"csrfToken": csrf_pair(client), "data": data or {}},
        content_type="application/json",
    )
    assert response.status_code == 200
    return response.json()


@pytest.mark.parametrize(
    ("who", "user"),
    [
        ("no-image", {"name": "Ann", "email": "ann@example.com"}),
        ("null-image", {"name": "Bob", "email": "bob@example.com", "image": None}),
        ("only-id", {}),
        ("with-image", {"name": "Cy", "email": None, "image": "https://img/cy"}),
    ],
)
def test_jwt_session_keeps_only_the_fields_the_user_has(client, site, who, user):
    response = sign_in(client, who)
    claims = claims_of(response)
    fields = {"name": "name", "email": "email", "image": "picture"}
    assert {k for k in fields if fields[k] in claims} == set(user)
    assert client.get("/auth/session").json()["user"] == user
    assert updated_session(client)["user"] == user


def test_jwt_session_of_a_django_user_has_no_image(client, site):
    # Django's User has no image field: the record does not have it.
    get_user_model().objects.create_user("dora", email="dora@example.com", password="pw-dora-1")
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "dora", "password": "pw-dora-1"},
    )
    assert response.status_code == 302
    assert "picture" not in claims_of(response)
    expected = {"name": "dora", "email": "dora@example.com"}
    assert client.get("/auth/session").json()["user"] == expected
    assert updated_session(client)["user"] == expected


def test_database_session_sends_null_for_every_missing_field(client, site):
    site(session={"strategy": "database"}, adapter="webauth.adapters.django.DjangoAdapter")
    user = get_user_model().objects.create_user("eve", password="pw-eve-1")
    force_sign_in(client, user)
    expected = {"name": "eve", "email": None, "image": None}
    assert client.get("/auth/session").json()["user"] == expected
    assert updated_session(client)["user"] == expected


def test_force_sign_in_follows_the_same_rule(client, site):
    user = get_user_model().objects.create_user("fay", email="fay@example.com")
    force_sign_in(client, user)
    assert client.get("/auth/session").json()["user"] == {
        "name": "fay",
        "email": "fay@example.com",
    }
    client.cookies.clear()
    force_sign_in(client, {"id": "m1", "email": "m@example.com", "image": None})
    assert client.get("/auth/session").json()["user"] == {
        "email": "m@example.com",
        "image": None,
    }


class Plain:
    """A user object of the project's own: only the attributes it has count."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def test_user_to_dict_leaves_out_what_an_object_does_not_have():
    assert user_to_dict(Plain(id=1)) == {"id": "1"}
    assert user_to_dict(Plain(id=1, name=None, image=None)) == {
        "id": "1",
        "name": None,
        "image": None,
    }
    assert user_to_dict(Plain(id=1, email="x@example.com", image="https://i")) == {
        "id": "1",
        "email": "x@example.com",
        "image": "https://i",
    }


def test_oauth_user_keeps_the_members_its_profile_mapping_gives():
    # The built-in mappings give all four members (None for what the service did
    # not send); a project's own ``profile=`` may leave some out, and they stay out.
    provider = OAuth2(
        id="acme",
        client_id="c",
        client_secret="s",
        issuer="https://acme.example",
        profile=lambda profile, tokens: {"id": profile["sub"], "name": profile.get("name")},
    )
    assert _user_data(provider, {"sub": "7", "name": "Al"}, {}) == {"id": "7", "name": "Al"}
    assert default_token(_user_data(provider, {"sub": "7"}, {})) == {"name": None, "sub": "7"}
    builtin = OAuth2(id="acme", client_id="c", client_secret="s", issuer="https://acme.example")
    assert _user_data(builtin, {"sub": "7", "email": "A@Example.com"}, {}) == {
        "id": "7",
        "name": None,
        "email": "a@example.com",
        "image": None,
    }
