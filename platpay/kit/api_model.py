"""Base Pydantic models: camelCase on the wire, snake_case in Python; request bodies strictly typed, unknown
request fields refused, and an explicit null refused where leaving a field out means something."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated, Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Strict,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple | set | frozenset):
        return any(_has_nul(item) for item in value)
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    return False


# Models extending another API model (IndividualCustomer(Customer)), by name: the document writes each as
# the reference does, allOf [its base, what it adds], the base a schema of its own (kit/openapi.py).
EXTENDS: dict[str, type[BaseModel]] = {}


def _record_base(cls: type[BaseModel]) -> None:
    base = cls.__bases__[0]
    public = not cls.__name__.startswith("_") and not base.__name__.startswith("_")
    if public and base not in (ApiModel, ApiRequest) and issubclass(base, ApiModel | ApiRequest):
        EXTENDS[cls.__name__] = base


class ApiModel(BaseModel):
    """A response body. Serialized by alias with None fields omitted."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _record_base(cls)

    def to_api(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ApiRequest(BaseModel):
    """A request body: only the documented camelCase names are accepted, each strictly of its JSON type
    (`"12"` is not a number, `"true"` not a boolean, `1` not a string): a client sending another type has a
    bug worth hearing about. A value whose JSON form is a string (a date, a timestamp, an enum's value) is
    declared with `FromString` (`JsonDate`, `JsonDatetime`, `AwareJsonDatetime`)."""

    model_config = ConfigDict(
        alias_generator=to_camel, extra="forbid", str_strip_whitespace=False, strict=True
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _record_base(cls)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul_characters(cls, value: Any) -> Any:
        # No text we store may hold NUL (PostgreSQL refuses it); refused here alike on every backend.
        if _has_nul(value):
            raise ValueError("must not contain NUL characters")
        return value


# ---- values whose JSON form is a string ----------------------------------------------------------------


def _json_string(value: Any) -> Any:
    # A JSON number, boolean, array or object is refused before the lax parsing below could read one (a
    # number as a Unix timestamp, say); anything else (a string, or a Python value built in code) goes on.
    if isinstance(value, int | float | list | dict):  # bool is an int
        raise PydanticCustomError("string_type", "Input should be a string")
    return value


FromString = (Strict(False), BeforeValidator(_json_string))
"""`Annotated[X, *FromString]`: a request field of type X (a date, a datetime, an enum) whose JSON form is a
string, parsed from that string (ISO 8601, the enum's value) where the strict request models would want
the Python type itself; any other JSON type is refused."""

JsonDate = Annotated[date, *FromString]
JsonDatetime = Annotated[datetime, *FromString]
AwareJsonDatetime = Annotated[AwareDatetime, *FromString]


# ---- fields whose omission means something -----------------------------------------------------------


def without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`{anyOf: [X, {type: null}], description…}` -> `{…X, description…}` (a `$ref` X keeps only the
    description beside it); anything else unchanged."""
    members = schema.get("anyOf")
    if not members:
        return schema
    kept = [member for member in members if member != {"type": "null"}]
    if len(kept) == len(members):
        return schema
    if len(kept) == 1 and "$ref" in kept[0]:  # a reference keeps only a description beside it
        described = {"description": schema["description"]} if "description" in schema else {}
        return {**kept[0], **described}
    rest = {
        key: value for key, value in schema.items() if key != "anyOf" and (key, value) != ("default", None)
    }
    return {**kept[0], **rest} if len(kept) == 1 else {"anyOf": kept, **rest}


@dataclass(frozen=True, slots=True)
class NullRefused:
    """`Annotated[X | None, NullRefused("to send the whole available balance")] = Field(default=None, …)`:
    an optional request field whose omission means something (a default the server fills in, a value a
    PATCH keeps) refuses an explicit null with a 400 naming the field, so a client serialising None cannot
    ask for that meaning by accident. `omit_to` completes "omit it …" in the message. The document shows
    the field without a null alternative. A field whose null the API itself defines (null clears a limit)
    is not marked."""

    omit_to: str

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        message = f"must not be null: omit it {self.omit_to}"

        def refuse_null(value: Any) -> Any:
            if value is None:
                raise PydanticCustomError("null_refused", message)
            return value

        return core_schema.no_info_before_validator_function(refuse_null, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return without_null(handler(schema))


KEPT_WHEN_OMITTED = NullRefused("to keep its value")
"""A PATCH field that cannot be cleared: omitted, it keeps its value; null is refused."""
