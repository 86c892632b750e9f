"""The benchmark site's yardstick view does the work its figures claim to measure."""

import json

import pytest
from django.contrib.auth import get_user_model

from benchmarks.http.views import SESSION_COOKIE, session_floor
from webauth import jwt
from webauth.conf import get_config
from webauth.test import session_cookie_for

pytestmark = pytest.mark.django_db


def test_the_floor_view_decodes_answers_and_reissues(rf):
    user = get_user_model().objects.create_user("ann", "ann@example.com", "pw", first_name="Ann")
    name, value = session_cookie_for(user)
    assert name == SESSION_COOKIE
    request = rf.get("/floor/session")
    request.COOKIES[name] = value
    response = session_floor(request)
    body = json.loads(response.content)
    assert body["user"] == {"name": "Ann", "email": "ann@example.com", "image": None}
    assert body["expires"].endswith(".000Z")
    morsel = response.cookies[name]
    assert morsel.value != value and morsel["httponly"] and morsel["samesite"] == "Lax"
    claims = jwt.decode(token=morsel.value, secret=get_config().secret, salt=name)
    assert claims is not None and claims["sub"] == str(user.pk)
    assert response["Cache-Control"] == "private, no-cache, no-store"


def test_the_floor_view_without_a_session_answers_null(rf):
    response = session_floor(rf.get("/floor/session"))
    assert response.content == b"null" and not response.cookies
