"""The OpenAPI document /openapi.json serves: what FastAPI generates from the routes, brought to the
reference's shape by a few general steps, so that a client generated from it has the reference's names and
types (docs/architecture.md, "OpenAPI conventions"):

- every error response is `Error<status>` (the reference splits its error schema by status): the one error
  shape with `status` pinned and `code` enumerating every code an ApiError of that status carries, so a new
  error class appears in it by itself;
- an optional parameter or an optional body is typed as its value, without a `null` alternative (a client
  leaves it out), and so is an optional property of an object that only responses carry (responses omit
  null fields);
- a model extending another API model (IndividualCustomer(Customer)) is `allOf` [its base, what it adds],
  as the reference composes them, the base a schema of its own; a narrowed value is a one-value `enum`;
- a multipart body is written inline in its operation, as the reference has it (a generated client names
  it `<OperationId>Body`);
- parameters and properties carry no `title` (pydantic's "Sortorder" for `sortOrder`): a generator names
  an inline enum after its parameter or property, as for the reference (`ListTransactionsSortOrder`);
- no framework 422 and no schemas of its own;
- its paths in the order the document has always had (`data/openapi_path_order.json`; a path not listed
  there follows, in the app's order), which is also the order the app tries its routes in but where a more
  specific route must go first (kit/routing.py `by_specificity`).

Operation ids, tags and schema names are not made here: each route states its `operation_id=` and each
model's class name is its component name (tests/test_openapi_reference.py compares them to the reference).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema
from starlette.routing import BaseRoute

from platpay import API_VERSION, package_version
from platpay.kit.api_model import EXTENDS, ApiRequest, without_null

# A route's `responses=`, as FastAPI types it.
Responses = dict[int | str, dict[str, Any]]

SCHEMAS = "#/components/schemas/"
HTTP_METHODS = ("get", "put", "post", "patch", "delete", "options", "head", "trace")
DESCRIPTION = (
    "Self-hostable Platform Payments Service. Every error is `{status, code, message, details}`, documented "
    "per status as `Error<status>`. Authenticate with HTTP Basic (`clientId:clientSecret`)."
)


def error_name(status: int | str) -> str:
    return f"Error{status}"


def error_content(status: int | str) -> dict[str, Any]:
    """A response's `content` naming the error schema of its status (the component is added by document())."""
    return {"application/json": {"schema": {"$ref": f"{SCHEMAS}{error_name(status)}"}}}


@cache
def _path_positions() -> dict[str, int]:
    paths = json.loads(
        resources.files("platpay.kit").joinpath("data/openapi_path_order.json").read_text("utf-8")
    )
    return {path: position for position, path in enumerate(paths)}


def documented_order(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """The routes in the document's order: by their path's place in `data/openapi_path_order.json`, those of
    one path (its methods) and the unlisted ones after them in the app's order."""
    positions = _path_positions()
    return sorted(routes, key=lambda route: positions.get(getattr(route, "path", ""), len(positions)))


def document(app: FastAPI, *, error_codes: Mapping[int, set[str]]) -> dict[str, Any]:
    """The app's document, built once; `error_codes` holds every code each HTTP status can carry."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title="platpay", version=API_VERSION, description=DESCRIPTION, routes=documented_order(app.routes)
    )
    _examples_as_written(app, schema)
    # info.version is the API's version (the reference's); the software serving it is versioned apart.
    schema["info"]["x-platpay-version"] = package_version()
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for operation in operations(schema):
        operation.get("responses", {}).pop("422", None)
        for parameter in operation.get("parameters", []):
            if not parameter.get("required"):
                parameter["schema"] = without_null(parameter["schema"])
            parameter["schema"].pop("title", None)
        body = operation.get("requestBody")
        if body is not None:
            for media in body.get("content", {}).values():
                if not body.get("required"):
                    media["schema"] = without_null(media["schema"])
                media["schema"].pop("title", None)  # FastAPI's name of the parameter, not of the body
                _inline_form_body(media, components)
    _form_components(components)
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    used_alone = set(components)
    for name, base in EXTENDS.items():
        if name in components:
            _extending(name, base, components, used_alone=used_alone)
    for component in components.values():
        for value in _properties(component).values():
            value.pop("title", None)  # "Sortorder": a generator would name an inline enum after it
            if value.get("default", ...) is None:
                del value["default"]
    _const_as_enum(components)
    _drop_null_from_response_only_schemas(schema, components)
    components.update(_error_schemas(schema, error_codes))
    schema["components"]["schemas"] = dict(sorted(components.items()))
    app.openapi_schema = schema
    return schema


def _examples_as_written(app: FastAPI, schema: dict[str, Any]) -> None:
    """Request examples as `request_examples` wrote them: FastAPI renders the document without null values,
    and a null in an example is meant (PATCH /cards/{id} `{maxSpendPerTransaction: null}` clears a limit)."""
    for route in app.routes:
        extra = getattr(route, "openapi_extra", None) or {}
        content = extra.get("requestBody", {}).get("content", {})
        path_item = schema.get("paths", {}).get(getattr(route, "path_format", ""), {})
        for method in getattr(route, "methods", ()):
            operation = path_item.get(method.lower())
            if operation is None:
                continue
            for media_type, media in content.items():
                documented = operation.get("requestBody", {}).get("content", {}).get(media_type)
                if documented is not None and "examples" in media:
                    documented["examples"] = media["examples"]


def operations(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path_item in schema.get("paths", {}).values():
        for method in HTTP_METHODS:
            if method in path_item:
                yield path_item[method]


def _const_as_enum(node: Any) -> None:
    """`const: X` -> `enum: [X]`, as the reference writes a narrowed property: generators combine it with
    the base's enum (IndividualCustomer's customerType with Customer's)."""
    if isinstance(node, dict):
        if "const" in node and "enum" not in node:
            node["enum"] = [node.pop("const")]
        for value in node.values():
            _const_as_enum(value)
    elif isinstance(node, list):
        for value in node:
            _const_as_enum(value)


def _extending(name: str, base: type[BaseModel], components: dict[str, Any], *, used_alone: set[str]) -> None:
    """A model that extends another is written as the reference writes one: allOf [the base (a schema of
    its own), the properties it adds or narrows]. A request refuses unknown fields: its base then holds
    the common fields only and the whole refuses the rest (`unevaluatedProperties`), so a request base the
    document already uses on its own (BusinessInfoUpdate) leaves its extension as it is."""
    request = issubclass(base, ApiRequest)
    if request and base.__name__ in used_alone:
        return
    base_schema = base.model_json_schema(
        ref_template=SCHEMAS + "{model}", mode="validation" if request else "serialization"
    )
    for def_name, definition in base_schema.pop("$defs", {}).items():
        components.setdefault(def_name, definition)
    if request:
        base_schema.pop("additionalProperties", None)
    components.setdefault(base.__name__, base_schema)
    own = components[name]
    inherited = components[base.__name__].get("properties", {})
    added = {
        key: value
        for key, value in own.get("properties", {}).items()
        if key not in inherited or _comparable(inherited[key]) != _comparable(value)
    }
    part: dict[str, Any] = {"type": "object", "properties": added}
    required = [key for key in own.get("required", []) if key in added]
    if required:
        part["required"] = required
    described = {key: own[key] for key in ("title", "description") if key in own}
    components[name] = {**described, "allOf": [{"$ref": SCHEMAS + base.__name__}, part]}
    if request:
        components[name]["unevaluatedProperties"] = False


def _inline_form_body(media: dict[str, Any], components: dict[str, Any]) -> None:
    """FastAPI names a form body `Body_<operationId>`; the reference writes it inline."""
    ref = media.get("schema", {}).get("$ref", "")
    name = ref.removeprefix(SCHEMAS)
    if name.startswith("Body_") and name in components:
        inline = dict(components.pop(name))
        inline.pop("title", None)
        for field in inline.get("properties", {}).values():
            if field.get("contentMediaType") == "application/octet-stream":
                field["format"] = "binary"  # a file, as OpenAPI 3.0 generators know it
        media["schema"] = inline


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(SCHEMAS):
            yield ref.removeprefix(SCHEMAS)
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list | tuple):
        for value in node:
            yield from _refs(value)


def _reachable(start: Any, components: dict[str, Any]) -> set[str]:
    seen: set[str] = set()
    pending = list(_refs(start))
    while pending:
        name = pending.pop()
        if name in seen or name not in components:
            continue
        seen.add(name)
        pending.extend(_refs(components[name]))
    return seen


def _drop_null_from_response_only_schemas(schema: dict[str, Any], components: dict[str, Any]) -> None:
    """Responses are rendered without null fields (ApiRoute's response_model_exclude_none), so an optional
    property of a schema no request uses is its value or absent, never null. A schema a request also uses
    keeps `null` where the request accepts it."""
    request_side = [
        (operation.get("parameters", []), operation.get("requestBody", {}))
        for operation in operations(schema)
    ]
    used_by_requests = _reachable(request_side, components)
    for name, component in components.items():
        if name in used_by_requests:
            continue
        for part in [component, *component.get("allOf", [])]:
            required = set(part.get("required", []))
            properties = part.get("properties", {})
            for key, value in properties.items():
                if key not in required:
                    properties[key] = without_null(value)


def _properties(component: dict[str, Any]) -> dict[str, Any]:
    """The properties a component declares, its own and those of its allOf parts."""
    found = dict(component.get("properties", {}))
    for part in component.get("allOf", []):
        found.update(part.get("properties", {}))
    return found


def _comparable(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value for key, value in schema.items() if key != "title" and (key, value) != ("default", None)
    }


def _error_schemas(schema: dict[str, Any], codes: Mapping[int, set[str]]) -> dict[str, Any]:
    """An `Error<status>` schema for every status some response names."""
    statuses = sorted(
        {
            int(name.removeprefix("Error"))
            for name in _refs(schema.get("paths", {}))
            if name.startswith("Error") and name.removeprefix("Error").isdigit()
        }
    )
    schemas = {error_name(status): _error_schema(status, codes.get(status, set())) for status in statuses}
    if 400 in statuses:
        schemas.update(FIELD_ERROR_SCHEMAS)
    return schemas


def _error_schema(status: int, codes: set[str]) -> dict[str, Any]:
    code: dict[str, Any] = {"type": "string", "description": "machine-readable error code"}
    if codes:
        code["enum"] = sorted(codes)
    details: dict[str, Any] = {
        "type": "object",
        "additionalProperties": True,
        "description": "structured context, e.g. `fields` naming each bad field",
    }
    if status == 400:
        details["description"] = (
            "structured context; a refused field is named twice, in the same order: `fields` (platpay's "
            "`{field, location, message}`) and `errors` (the reference's FieldError, with the constraint the "
            "value broke)"
        )
        details["properties"] = {
            "fields": {
                "type": "array",
                "description": "one entry per bad field: its dot path (`items.0.amount`), where it was sent "
                "(body, query, path, header) and what is wrong",
                "items": {
                    "type": "object",
                    "required": ["field"],
                    "properties": {
                        "field": {"type": "string"},
                        "location": {"type": "string"},
                        "message": {"type": "string"},
                    },
                },
            },
            "errors": {
                "type": "array",
                "description": "one entry per bad field, beside `fields` and in its order",
                "items": {"$ref": f"{SCHEMAS}FieldError"},
            },
        }
    return {
        "type": "object",
        "title": error_name(status),
        "description": f"The error answered with HTTP {status}: `status` equals it, `details` names what "
        "was wrong.",
        "required": ["status", "code", "message"],
        "properties": {
            "status": {"type": "integer", "enum": [status], "description": "HTTP status code"},
            "code": code,
            "message": {"type": "string", "description": "what went wrong, with the offending value"},
            "details": details,
        },
    }


# The reference's schemas of `Error400.details.errors` (its 2026-08 document), as it writes them.
FIELD_ERROR_SCHEMAS: dict[str, Any] = {
    "FieldConstraint": {
        "type": "object",
        "description": "What a refused field's value must satisfy; only the keys that apply.",
        "properties": {
            "format": {
                "type": "string",
                "description": "named format the value must have: `date-time`, `date`, `time`, `uuid`, "
                "`url`, `email`, `iso3166-1-alpha-2`...",
                "example": "date-time",
            },
            "pattern": {"type": "string", "description": "regular expression the value must match"},
            "enum": {
                "type": "array",
                "items": {"type": "string"},
                "description": "the allowed values, when the field is drawn from a fixed set",
            },
            "minLength": {"type": "integer", "description": "minimum length in characters"},
            "maxLength": {"type": "integer", "description": "maximum length in characters"},
        },
    },
    "FieldError": {
        "type": "object",
        "required": ["field"],
        "description": "One refused field of a 400.",
        "properties": {
            "field": {
                "type": "string",
                "description": "dot path to the field in the request (`beneficiary.fullName`, an array item "
                "by its index: `fundingSources.0`); a query, path or header parameter by its name",
                "example": "lockedCurrencySide",
            },
            "constraint": {"$ref": f"{SCHEMAS}FieldConstraint"},
            "message": {
                "type": "string",
                "description": "what is wrong with the value",
                "example": "Input should be 'SENDING' or 'RECEIVING'",
            },
        },
    },
}


class ExampleIds:
    """The ids request examples name. tests/test_openapi_examples.py sends every example with each of these
    replaced by a real one from a fresh sandbox (and fails for a body without an example)."""

    CUSTOMER = "Customer:019542f5-b3e7-1d02-0000-000000000001"
    INTERNAL_ACCOUNT = "InternalAccount:019542f5-b3e7-1d02-0000-000000000002"
    EXTERNAL_ACCOUNT = "ExternalAccount:019542f5-b3e7-1d02-0000-000000000003"
    MXN_EXTERNAL_ACCOUNT = "ExternalAccount:019542f5-b3e7-1d02-0000-000000000013"
    CRYPTO_INTERNAL_ACCOUNT = "InternalAccount:019542f5-b3e7-1d02-0000-000000000012"
    QUOTE = "Quote:019542f5-b3e7-1d02-0000-000000000006"
    CARD_TRANSACTION = "CardTransaction:019542f5-b3e7-1d02-0000-000000000100"
    BUSINESS_CUSTOMER = "Customer:019542f5-b3e7-1d02-0000-000000000021"
    BENEFICIAL_OWNER = "BeneficialOwner:019542f5-b3e7-1d02-0000-000000000023"
    EMBEDDED_WALLET = "InternalAccount:019542f5-b3e7-1d02-0000-000000000022"
    # UMA addresses of two of the sandbox's customers (an inviter and an invitee)
    CUSTOMER_UMA = "$jane.doe@acme.platpay.test"
    INVITEE_UMA = "$john.roe@acme.platpay.test"


def request_examples(*, media_type: str = "application/json", **examples: tuple[str, Any]) -> dict[str, Any]:
    """`openapi_extra=` for a route: its request body's named examples, `name=(summary, value)`, written
    where the reference writes them (the media type's `examples`). Every request body has at least one;
    ids in them are ExampleIds."""
    named = {name: {"summary": summary, "value": value} for name, (summary, value) in examples.items()}
    return {"requestBody": {"content": {media_type: {"examples": named}}}}


# Request bodies an endpoint reads itself (a streamed upload), documented by a model FastAPI never sees:
# document() adds each model (and what it references) to the components.
FORM_MODELS: dict[str, type[BaseModel]] = {}


def form_request(
    model: type[BaseModel], *, media_type: str = "multipart/form-data", **examples: tuple[str, Any]
) -> dict[str, Any]:
    """`openapi_extra=` for a route that parses its own body: the body documented as `model` (a component
    of that name) with its examples, as `request_examples` writes them."""
    FORM_MODELS[model.__name__] = model
    extra = request_examples(media_type=media_type, **examples)
    media = extra["requestBody"]["content"][media_type]
    media["schema"] = {"$ref": f"{SCHEMAS}{model.__name__}"}
    extra["requestBody"]["required"] = True
    return extra


def _form_components(components: dict[str, Any]) -> None:
    for name, model in FORM_MODELS.items():
        schema = model.model_json_schema(ref_template=SCHEMAS + "{model}", mode="validation")
        for def_name, definition in schema.pop("$defs", {}).items():
            components.setdefault(def_name, definition)
        components[name] = schema


class DocumentedOneOf:
    """Annotation documenting a union of response models as the reference does, `oneOf` with a
    `discriminator` mapping, where pydantic cannot discriminate it (a member's discriminating property is
    not one literal: AuthMethodResponse's `type` is any AuthMethodType). Only the document changes; the
    union validates and serializes as before. Use it inside a TypeAliasType, which names the component:
    `TypeAliasType("XOneOf", Annotated[A | B, DocumentedOneOf("type", {"X": A, "Y": B})])`."""

    __slots__ = ("mapping", "property_name")

    def __init__(self, property_name: str, mapping: Mapping[str, type[BaseModel]]) -> None:
        self.property_name = property_name
        self.mapping = dict(mapping)

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        members = handler(core_schema)["anyOf"]  # the union's members as `$ref`s, in its order
        choices = [choice[0] if isinstance(choice, tuple) else choice for choice in core_schema["choices"]]
        by_model = {
            _core_ref(choice): member["$ref"] for choice, member in zip(choices, members, strict=True)
        }
        refs = {
            tag: by_model[_core_ref(model.__pydantic_core_schema__)] for tag, model in self.mapping.items()
        }
        return {
            "oneOf": [{"$ref": ref} for ref in dict.fromkeys(refs.values())],
            "discriminator": {"propertyName": self.property_name, "mapping": refs},
        }


def _core_ref(schema: Any) -> str:
    """The reference a model's core schema has (`ref`), or that a reference to it names (`schema_ref`)."""
    if schema.get("type") == "definitions":
        schema = schema["schema"]
    ref: str = schema.get("schema_ref") or schema["ref"]
    return ref
