"""Base Pydantic models: camelCase on the wire, snake_case in Python, unknown request fields refused."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """A response body. Serialized by alias with None fields omitted."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)

    def to_api(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ApiRequest(BaseModel):
    """A request body: only the documented camelCase names are accepted."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", str_strip_whitespace=False)
