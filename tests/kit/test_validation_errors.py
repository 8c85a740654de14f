"""kit/validation_errors.py: the constraint and the request path of a pydantic error, as details.errors
names them. Pure: pydantic's own errors, no app."""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID

import pytest
from pydantic import AwareDatetime, BaseModel, Field, TypeAdapter, ValidationError

from platpay.errors import InvalidInput, invalid_field
from platpay.kit.validation_errors import allowed_values, constraint_of, request_path


class Color(StrEnum):
    RED = "RED"
    DARK_BLUE = "DARK BLUE"


def first_error(annotation: Any, value: Any) -> dict[str, Any]:
    with pytest.raises(ValidationError) as raised:
        TypeAdapter(annotation).validate_python(value)
    return raised.value.errors()[0]


class TestConstraintOf:
    @pytest.mark.parametrize(
        ("annotation", "value", "constraint"),
        [
            (Annotated[str, Field(pattern=r"^\d{5}$")], "1234", {"pattern": r"^\d{5}$"}),
            (Literal["SENDING", "RECEIVING"], "X", {"enum": ["SENDING", "RECEIVING"]}),
            (Color, "GREEN", {"enum": ["RED", "DARK BLUE"]}),
            (Literal["it's", 'say "hi"'], "x", {"enum": ["it's", 'say "hi"']}),
            (Annotated[str, Field(min_length=2)], "a", {"minLength": 2}),
            (Annotated[str, Field(max_length=3)], "abcd", {"maxLength": 3}),
            (datetime, "yesterday", {"format": "date-time"}),
            (AwareDatetime, "2025-10-13T12:00:00", {"format": "date-time"}),
            (date, "2025-13-01", {"format": "date"}),
            (UUID, "not-a-uuid", {"format": "uuid"}),
            (int, "many", None),  # a wrong type: nothing a form could pre-check
            (Literal[1, 2], 3, None),  # FieldConstraint's enum lists strings
            (Annotated[int, Field(ge=1)], 0, None),  # a bound the reference's constraint has no key for
            (Annotated[list[str], Field(max_length=1)], ["a", "b"], None),  # items, not characters
        ],
    )
    def test_each_error_type_maps_to_the_key_that_applies(self, annotation, value, constraint):
        assert constraint_of(first_error(annotation, value)) == constraint

    def test_a_rule_of_ours_names_its_constraint_in_the_context(self):
        error = {
            "type": "value_error",
            "loc": ("x",),
            "msg": "no",
            "ctx": {"constraint": {"format": "email"}},
        }
        assert constraint_of(error) == {"format": "email"}

    @pytest.mark.parametrize("expected", ["", "True or False", "'a' or None", "'unterminated"])
    def test_an_expected_text_not_all_strings_gives_no_enum(self, expected):
        assert allowed_values(expected) is None


class _Account(BaseModel):
    source_type: Literal["ACCOUNT"] = Field(alias="sourceType")
    account_id: str = Field(alias="accountId")


class _Funding(BaseModel):
    source_type: Literal["REALTIME_FUNDING"] = Field(alias="sourceType")
    currency: str


class _Body(BaseModel):
    source: Annotated[_Account | _Funding, Field(discriminator="source_type")]
    amounts: list[int | str] = []


class TestRequestPath:
    def locs(self, body: dict[str, Any]) -> list[tuple[Any, ...]]:
        with pytest.raises(ValidationError) as raised:
            _Body.model_validate(body)
        return [tuple(error["loc"]) for error in raised.value.errors()]

    def test_the_tag_of_a_discriminated_union_is_left_out(self):
        body = {"source": {"sourceType": "ACCOUNT", "accountId": 7}}
        [loc] = self.locs(body)
        assert loc == ("source", "ACCOUNT", "accountId")
        assert request_path(loc, body) == "source.accountId"

    def test_a_missing_field_under_a_tag_is_named(self):
        body = {"source": {"sourceType": "REALTIME_FUNDING"}}
        [loc] = self.locs(body)
        assert request_path(loc, body) == "source.currency"

    def test_union_member_labels_are_left_out_and_items_named_by_index(self):
        body = {"source": {"sourceType": "ACCOUNT", "accountId": "a"}, "amounts": [1, None]}
        locs = self.locs(body)
        assert locs == [("amounts", 1, "int"), ("amounts", 1, "str")]
        assert {request_path(loc, body) for loc in locs} == {"amounts.1"}

    def test_a_field_the_request_lacks_keeps_its_whole_path(self):
        """A rule may name a member of an object that was not sent at all (`address.postalCode`)."""
        assert request_path(("address", "postalCode"), {"fullName": "Jane"}) == "address.postalCode"
        assert request_path(("items", "3", "amount"), {"items": [{}]}) == "items.3.amount"

    def test_keys_the_request_holds_are_kept_whatever_their_case(self):
        assert (
            request_path(("limits", "USD", "daily"), {"limits": {"USD": {"daily": -1}}}) == "limits.USD.daily"
        )


class TestHandRaised:
    def test_invalid_field_writes_both_lists(self):
        error = invalid_field(
            "webhookEndpoint", "URL has no host", constraint={"format": "url"}, location="body"
        )
        assert error.body()["details"] == {
            "fields": [{"field": "webhookEndpoint", "message": "URL has no host", "location": "body"}],
            "errors": [
                {"field": "webhookEndpoint", "constraint": {"format": "url"}, "message": "URL has no host"}
            ],
        }

    def test_an_error_built_with_fields_alone_renders_errors_beside_them(self):
        fields = [{"field": "a", "message": "bad"}, {"field": "b.0", "location": "body", "message": "worse"}]
        error = InvalidInput("invalid input", details={"fields": fields, "accountId": "x"})
        assert error.body()["details"] == {
            "fields": fields,
            "accountId": "x",
            "errors": [{"field": "a", "message": "bad"}, {"field": "b.0", "message": "worse"}],
        }
        assert error.details == {"fields": fields, "accountId": "x"}  # what the raise site wrote, unchanged

    def test_an_error_without_fields_gets_no_errors(self):
        assert InvalidInput("nothing to transfer", details={"accountId": "x"}).body()["details"] == {
            "accountId": "x"
        }
