"""Base Pydantic models: camelCase on the wire, snake_case in Python, unknown request fields refused."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic.alias_generators import to_camel


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
    """A request body: only the documented camelCase names are accepted."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", str_strip_whitespace=False)

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
