from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import Field, field_validator

from platpay.kit.api_model import ApiModel, ApiRequest, FromString
from platpay.kit.openapi import request_examples
from platpay.kit.pagination import Page


class Permission(StrEnum):
    """VIEW reads; TRANSACT also moves money; MANAGE also manages config, tokens and customers.

    Every token can read (VIEW is implied by the other two); a VIEW-only token is read-only.
    """

    VIEW = "VIEW"
    TRANSACT = "TRANSACT"
    MANAGE = "MANAGE"


class ApiToken(ApiModel):
    id: str = Field(examples=["Token:019542f5-b3e7-1d02-0000-000000000001"])
    name: str
    permissions: list[Permission]
    client_id: str = Field(description="HTTP Basic username")
    client_secret: str | None = Field(
        default=None, description="HTTP Basic password; only in the create response, never again"
    )
    created_at: datetime
    updated_at: datetime


class ApiTokenCreateRequest(ApiRequest):
    name: str = Field(min_length=1, max_length=200, description="helps you tell tokens apart")
    permissions: list[Annotated[Permission, *FromString]] = Field(min_length=1, max_length=3)

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str) -> str:
        if not value.strip() or not value.isprintable():
            raise ValueError("must be printable and not blank")
        return value

    @field_validator("permissions")
    @classmethod
    def _unique(cls, value: list[Permission]) -> list[Permission]:
        if len(set(value)) != len(value):
            raise ValueError("permissions must not repeat")
        return value


class TokenListResponse(Page[ApiToken]):
    """GET /tokens."""


TOKEN_CREATE_EXAMPLES = request_examples(
    ciToken=(
        "A token for CI that reads and moves money",
        {"name": "CI pipeline", "permissions": ["VIEW", "TRANSACT"]},
    )
)
