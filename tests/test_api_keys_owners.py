"""API keys of a project-defined owner (``WEBAUTH["api_keys"]["owners"]``, docs/api-keys.md).

Django's ``auth.Group`` stands for the project's own model (a team, an
organisation): a key made for it belongs to it, acts as no user, is refused
once the group is gone, counts against the group's ``max_keys``, and is
managed in the account center by the users ``owners_of`` names and in the admin.
"""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connection, transaction
from django.http import JsonResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import include, path, reverse
from ninja import NinjaAPI
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from webauth.api_keys import (
    ApiKeyError,
    create_key,
    list_keys,
    owner_of,
    owner_ref,
    owners_for,
    revoke,
    revoke_key,
)
from webauth.checks import check_config
from webauth.conf import build_config, get_config
from webauth.contrib.ninja import ApiKey as NinjaApiKey
from webauth.contrib.rest_framework import ApiKeyAuthentication, HasApiKeyScopes
from webauth.decorators import api_key_required
from webauth.models import ApiKey
from webauth.test import session_cookie_for

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
KEY = re.compile(r"wak_[0-9A-Za-z]{58}")


def groups_of(user):
    """``api_keys.owners_of``: a user manages the keys of the groups they belong to."""
    return user.groups.all()


@api_key_required("deploy")
def deploy(request):
    owner = request.api_key.owner
    return JsonResponse(
        {
            "authenticated": request.user.is_authenticated,
            "owner": getattr(owner, "name", None) or getattr(owner, "username", None),
            "user": request.api_key.user is not None,
        }
    )


class DrfDeploy(APIView):
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [HasApiKeyScopes]
    renderer_classes = [JSONRenderer]
    required_scopes = ["deploy"]

    def get(self, request):
        return Response(
            {"authenticated": request.user.is_authenticated, "owner": request.auth.owner.name}
        )


class DrfSignedInOnly(DrfDeploy):
    permission_classes = [IsAuthenticated & HasApiKeyScopes]


ninja = NinjaAPI(urls_namespace="webauth-tests-api-key-owners")


@ninja.get("/deploy", auth=NinjaApiKey(scopes=["deploy"]))
def ninja_deploy(request):
    return {"owner": request.auth.name, "key": request.api_key.record.name}


urlpatterns = [
    path("admin/", admin.site.urls),
    path("account/", include("webauth.account.urls")),
    path("auth/", include("webauth.urls")),
    path("deploy", deploy),
    path("drf/deploy", DrfDeploy.as_view()),
    path("drf/signed-in", DrfSignedInOnly.as_view()),
    path("ninja/", ninja.urls),
]


@pytest.fixture(autouse=True)
def site(settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": ["webauth.providers.DjangoCredentials"],
        "api_keys": {
            "scopes": ["deploy", "orders:read"],
            "owners": ["auth.Group"],
            "owners_of": f"{__name__}.groups_of",
        },
    }


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", email="alice@example.com", password="pw")


@pytest.fixture
def ops(alice):
    group = Group.objects.create(name="Ops")
    alice.groups.add(group)
    return group


def bearer(key):
    return Client(headers={"Authorization": f"Bearer {key}"})


def signed_in(user):
    client = Client()
    client.cookies["authjs.session-token"] = session_cookie_for(user)[1]
    return client


def post_form(client, data):
    client.get("/account/api-keys/")
    token = client.cookies["csrftoken"].value
    return client.post("/account/api-keys/", {**data, "csrfmiddlewaretoken": token})


# -- the settings ------------------------------------------------------------------------------
def test_owners_are_model_labels_kept_lower_case():
    options = build_config(
        {"secret": SECRET, "api_keys": {"owners": "auth.Group"}}, lambda name: None
    ).api_keys
    assert options.owners == ("auth.group",)
    assert options.owners_of is None
    assert get_config().api_keys.owners_of is groups_of


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"owners": ["Group"]}, "owners"),
        ({"owners": ["auth.Group.extra"]}, "owners"),
        ({"owners": [3]}, "owners"),
        ({"owners": {"auth.Group": 1}}, "owners"),
        ({"owners_of": f"{__name__}.groups_of"}, "owners_of"),
        ({"owners": ["auth.Group"], "owners_of": "no.such.function"}, "owners_of"),
    ],
)
def test_bad_owner_settings_are_configuration_errors(value, named):
    with pytest.raises(ImproperlyConfigured, match=named):
        build_config({"secret": SECRET, "api_keys": value}, lambda name: None)


def test_the_system_check_names_owners_that_are_no_installed_model(settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"owners": ["shop.Team"]}}
    errors = [m for m in check_config() if m.id == "webauth.E019"]
    assert len(errors) == 1 and "'shop.team'" in errors[0].msg
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"owners": [settings.AUTH_USER_MODEL]}}
    errors = [m for m in check_config() if m.id == "webauth.E019"]
    assert len(errors) == 1 and "user model" in errors[0].msg
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"owners": ["auth.Group"]}}
    assert not [m for m in check_config() if m.id == "webauth.E019"]


# -- making, listing and revoking ----------------------------------------------------------------
def test_a_key_made_for_an_owner_belongs_to_it_and_to_no_user(alice, ops):
    made = create_key(ops, name="deploys", scopes=["deploy"])
    assert made.record.owner == f"auth.group:{ops.pk}" == owner_ref(ops)
    assert made.record.user_id == ""
    row = ApiKey.objects.get()
    assert row.user_id is None and row.owner == f"auth.group:{ops.pk}"
    assert str(row) == f"API key {row.key_id} of auth.group:{ops.pk}"
    assert [k.key_id for k in list_keys(ops)] == [row.key_id]
    assert list_keys(alice) == []
    mine = create_key(alice, name="mine")
    assert [k.key_id for k in list_keys(alice)] == [mine.record.key_id]
    assert mine.record.owner == ""


def test_only_instances_of_owner_models_and_users_hold_keys(alice, settings):
    unsaved = Group(name="not saved")
    with pytest.raises(ApiKeyError, match="not saved"):
        create_key(unsaved, name="x")
    with pytest.raises(ApiKeyError, match=r"not in api_keys\.owners"):
        owner_ref(alice)
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"scopes": ["deploy"]}}
    group = Group.objects.create(name="Unlisted")
    with pytest.raises(ApiKeyError, match=r"not in api_keys\.owners"):
        owner_ref(group)


def test_owner_of_reads_only_listed_models_and_well_formed_references(ops, settings):
    assert owner_of(f"auth.group:{ops.pk}") == ops
    for ref in ("auth.group", f"auth.permission:{ops.pk}", "auth.group:not-a-number", "", 5):
        assert owner_of(ref) is None
    assert owner_of(f"auth.group:{ops.pk + 1000}") is None
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": None}
    assert owner_of(f"auth.group:{ops.pk}") is None


def test_an_owner_holds_at_most_max_keys_and_users_count_apart(alice, ops, settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "api_keys": {**settings.WEBAUTH["api_keys"], "max_keys": 2},
    }
    first = create_key(ops, name="1")
    create_key(ops, name="2")
    with pytest.raises(ApiKeyError, match="2 live keys"):
        create_key(ops, name="3")
    create_key(alice, name="a")  # the group's keys are not alice's
    create_key(alice, name="b")
    revoke_key(first.record)
    assert create_key(ops, name="3")  # a revoked key no longer counts


def test_revoking_an_owners_key_needs_that_owner(alice, ops):
    made = create_key(ops, name="deploys", scopes=["deploy"])
    other = Group.objects.create(name="Other")
    assert not revoke(str(alice.pk), made.record.key_id)  # not alice's
    assert not revoke("", made.record.key_id, owner=owner_ref(other))
    assert not revoke("", made.record.key_id)  # nobody
    assert bearer(made.key).get("/deploy").status_code == 200
    assert revoke("", made.record.key_id, owner=owner_ref(ops))
    assert not revoke_key(made.record)  # once
    assert bearer(made.key).get("/deploy").status_code == 401


def test_the_event_names_the_owner(ops, settings):
    seen = []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"api_key": lambda **m: seen.append(m)}}
    made = create_key(ops, name="evented")
    revoke_key(made.record)
    ref = f"auth.group:{ops.pk}"
    assert seen == [
        {
            "user_id": "",
            "owner": ref,
            "key_id": made.record.key_id,
            "key_name": "evented",
            "action": "created",
        },
        {"user_id": "", "owner": ref, "key_id": made.record.key_id, "action": "revoked"},
    ]


def test_the_table_holds_a_key_of_a_user_or_of_an_owner_never_both_nor_neither(alice, ops):
    base = {"name": "x", "secret_hash": "0" * 64}
    for key_id, holder in (("both", {"user": alice, "owner": "auth.group:1"}), ("none", {})):
        with pytest.raises(IntegrityError), transaction.atomic():
            ApiKey.objects.create(key_id=key_id, **base, **holder)
    assert not ApiKey.objects.exists()


# -- using a key ------------------------------------------------------------------------------
def test_an_owners_key_acts_as_no_user(ops):
    made = create_key(ops, name="deploys", scopes=["deploy"])
    response = bearer(made.key).get("/deploy")
    assert response.status_code == 200
    assert response.json() == {"authenticated": False, "owner": "Ops", "user": False}
    assert "Set-Cookie" not in response.headers


def test_a_users_key_still_has_its_user_as_owner(alice):
    made = create_key(alice, name="mine", scopes=["deploy"])
    assert bearer(made.key).get("/deploy").json() == {
        "authenticated": True,
        "owner": "alice",
        "user": True,
    }


def test_the_owner_is_read_only_once_the_secret_matched(ops):
    made = create_key(ops, name="deploys", scopes=["deploy"])
    bearer(made.key).get("/deploy")  # writes the last use
    with CaptureQueriesContext(connection) as good:
        assert bearer(made.key).get("/deploy").status_code == 200
    assert len(good.captured_queries) == 2  # the key with its (absent) user, then the group
    wrong = made.key[:20] + ("A" if made.key[20] != "A" else "B") + made.key[21:]
    with CaptureQueriesContext(connection) as guessed:
        assert bearer(wrong).get("/deploy").status_code == 401
    assert len(guessed.captured_queries) <= 1  # no second query for a wrong secret


def test_an_owner_gone_inactive_or_unlisted_is_refused(ops, settings, monkeypatch):
    made = create_key(ops, name="deploys", scopes=["deploy"])
    assert bearer(made.key).get("/deploy").status_code == 200
    monkeypatch.setattr(Group, "is_active", False, raising=False)
    assert bearer(made.key).get("/deploy").status_code == 401
    monkeypatch.undo()
    assert bearer(made.key).get("/deploy").status_code == 200
    # The model taken out of api_keys.owners: its keys hold no more.
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"scopes": ["deploy"]}}
    assert bearer(made.key).get("/deploy").status_code == 401


def test_a_key_whose_owner_row_is_missing_is_refused(ops):
    made = create_key(ops, name="deploys", scopes=["deploy"])
    # What a custom adapter's key meets when its owner is deleted behind its back.
    ApiKey.objects.update(owner=f"auth.group:{ops.pk + 1000}")
    assert bearer(made.key).get("/deploy").status_code == 401


def test_deleting_the_owner_deletes_its_keys_only(alice, ops):
    theirs = create_key(ops, name="deploys", scopes=["deploy"])
    mine = create_key(alice, name="mine", scopes=["deploy"])
    other = Group.objects.create(name="Other")
    kept = create_key(other, name="other's", scopes=["deploy"])
    ops.delete()
    assert set(ApiKey.objects.values_list("key_id", flat=True)) == {
        mine.record.key_id,
        kept.record.key_id,
    }
    assert bearer(theirs.key).get("/deploy").status_code == 401
    Group.objects.filter(pk=other.pk).delete()  # a queryset's delete too
    assert not ApiKey.objects.filter(owner__startswith="auth.group:").exists()


def test_deletion_is_watched_only_while_the_model_is_listed(ops, settings):
    made = create_key(ops, name="deploys")
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"scopes": ["deploy"]}}
    ops.delete()
    assert ApiKey.objects.filter(key_id=made.record.key_id).exists()


def test_drf_and_ninja_see_the_owner(ops):
    made = create_key(ops, name="deploys", scopes=["deploy"])
    drf = bearer(made.key).get("/drf/deploy")
    assert drf.status_code == 200 and drf.json() == {"authenticated": False, "owner": "Ops"}
    # IsAuthenticated asks for a user, which an owner's key is not.
    assert bearer(made.key).get("/drf/signed-in").status_code == 403
    ninja_answer = bearer(made.key).get("/ninja/deploy")
    assert ninja_answer.status_code == 200
    assert ninja_answer.json() == {"owner": "Ops", "key": "deploys"}


# -- the account center and the admin -------------------------------------------------------------
def test_owners_for_gives_the_listed_owners_the_user_manages(alice, ops, settings):
    assert owners_for(alice) == [(f"auth.group:{ops.pk}", ops)]
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "api_keys": {**settings.WEBAUTH["api_keys"], "owners_of": lambda user: [user, ops, ops]},
    }
    assert owners_for(alice) == [(f"auth.group:{ops.pk}", ops)]  # the user left out, once
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"owners": ["auth.Group"]}}
    assert owners_for(alice) == []


def test_the_account_center_lists_makes_and_revokes_an_owners_keys(alice, ops):
    client = signed_in(alice)
    page = client.get("/account/api-keys/").content.decode()
    assert "Keys of Ops" in page and "Ops has no API keys" in page
    assert f'<option value="auth.group:{ops.pk}">Ops</option>' in page
    made = post_form(
        client,
        {
            "op": "create",
            "name": "Deploys",
            "owner": f"auth.group:{ops.pk}",
            "scopes": ["deploy"],
            "days": "30",
        },
    )
    assert made.status_code == 200
    key = KEY.search(made.content.decode()).group(0)
    row = ApiKey.objects.get()
    assert row.owner == f"auth.group:{ops.pk}" and row.user_id is None
    assert list_keys(alice) == []
    again = client.get("/account/api-keys/").content.decode()
    assert f"wak_{row.key_id[:4]}" in again and key not in again
    # Revoking without naming the owner is revoking one of alice's own: none.
    post_form(client, {"op": "revoke", "key_id": row.key_id})
    assert bearer(key).get("/deploy").status_code == 200
    post_form(client, {"op": "revoke", "key_id": row.key_id, "owner": f"auth.group:{ops.pk}"})
    assert bearer(key).get("/deploy").status_code == 401


def test_the_account_center_refuses_owners_the_user_does_not_manage(alice, ops):
    other = Group.objects.create(name="Other")
    theirs = create_key(other, name="theirs", scopes=["deploy"])
    client = signed_in(alice)
    assert "Other" not in client.get("/account/api-keys/").content.decode()
    ref = f"auth.group:{other.pk}"
    made = post_form(client, {"op": "create", "name": "sneaky", "owner": ref, "days": "30"})
    assert made.status_code == 302 and made["Location"] == "/account/api-keys/"
    said = [str(m) for m in made.wsgi_request._messages]
    assert said == ["You do not manage the keys of that owner."]
    assert not ApiKey.objects.filter(name="sneaky").exists()
    post_form(client, {"op": "revoke", "key_id": theirs.record.key_id, "owner": ref})
    assert bearer(theirs.key).get("/deploy").status_code == 200
    # Taken out of the group: its keys are no longer alice's to manage.
    alice.groups.remove(ops)
    ops_key = create_key(ops, name="ops", scopes=["deploy"])
    post_form(client, {"op": "revoke", "key_id": ops_key.record.key_id, "owner": owner_ref(ops)})
    assert bearer(ops_key.key).get("/deploy").status_code == 200


def test_the_account_center_without_owners_of_shows_only_the_users_keys(alice, ops, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "api_keys": {"owners": ["auth.Group"]}}
    page = signed_in(alice).get("/account/api-keys/").content.decode()
    assert "Keys of" not in page and 'name="owner"' not in page


def test_the_admin_makes_and_revokes_an_owners_key(admin_client, ops):
    add = reverse("admin:webauth_apikey_add")
    response = admin_client.post(
        add, {"owner": f"auth.group:{ops.pk}", "name": "from the admin", "scopes": '["deploy"]'}
    )
    assert response.status_code == 200
    key = KEY.search(response.content.decode()).group(0)
    row = ApiKey.objects.get()
    assert row.owner == f"auth.group:{ops.pk}" and row.user_id is None
    assert bearer(key).get("/deploy").status_code == 200
    listing = admin_client.get(reverse("admin:webauth_apikey_changelist")).content.decode()
    assert f"auth.group:{ops.pk}" in listing
    admin_client.post(
        reverse("admin:webauth_apikey_changelist"),
        {"action": "revoke", "_selected_action": [row.pk]},
    )
    assert bearer(key).get("/deploy").status_code == 401


@pytest.mark.parametrize(
    ("holder", "says"),
    [
        ({}, "one of the two"),
        ({"user": "alice", "owner": "group"}, "one of the two"),
        ({"owner": "auth.group:999999"}, "No such owner"),
        ({"owner": "auth.permission:1"}, "No such owner"),
    ],
)
def test_the_admin_form_wants_one_holder_that_exists(admin_client, alice, ops, holder, says):
    data = {"name": "bad", "scopes": '["deploy"]'}
    if "user" in holder:
        data["user"] = alice.pk
    if holder.get("owner") == "group":
        data["owner"] = f"auth.group:{ops.pk}"
    elif "owner" in holder:
        data["owner"] = holder["owner"]
    response = admin_client.post(reverse("admin:webauth_apikey_add"), data)
    assert response.status_code == 200
    assert says in response.content.decode()
    assert not ApiKey.objects.exists()
