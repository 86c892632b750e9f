"""Checking a route's JSON answer (or a request body) against webauth/openapi.json's schemas."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from webauth.openapi import load_description

_URI = "urn:webauth:openapi"


def fits(value: Any, schema: str) -> None:
    """Raise ``jsonschema.ValidationError`` unless *value* fits ``components/schemas/<schema>``."""
    resource = Resource.from_contents(load_description(), default_specification=DRAFT202012)
    registry = Registry().with_resource(_URI, resource)
    validator = Draft202012Validator(
        {"$ref": f"{_URI}#/components/schemas/{schema}"}, registry=registry
    )
    validator.validate(value)
