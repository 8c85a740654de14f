"""`details.errors` entries (the reference's `FieldError`) for pydantic's validation errors: the bad field's
dot path in the request as it was sent, the constraint its value broke, and the message.

The path leaves out what pydantic puts in an error's `loc` that the request does not hold: the tag of a
discriminated union (`source.ACCOUNT.accountId` is `source.accountId` in the body) and the label of a union
member (`amount.int`). An array item is named by its index (`fundingSources.0`), as `details.fields` does.

The constraint comes from the error's type and context: a pattern mismatch carries `pattern`, a value outside
a fixed set (a Literal, an Enum) `enum`, a string too short or too long `minLength`/`maxLength`, a value that
does not parse as a date, a timestamp, a UUID or a URL `format`. A rule of our own reported as a pydantic
error names its constraint in the context: `{"type": "value_error", ..., "ctx": {"constraint": {"format":
"email"}}}` (customers/endpoints.py).
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Mapping, Sequence
from typing import Any, cast

from platpay.errors import FieldConstraint, field_error

# pydantic error types of a string that does not parse as the named format
_FORMATS = {
    "date_parsing": "date",
    "date_from_datetime_parsing": "date",
    "date_from_datetime_inexact": "date",
    "datetime_parsing": "date-time",
    "datetime_from_date_parsing": "date-time",
    "datetime_object_invalid": "date-time",
    "timezone_aware": "date-time",
    "timezone_naive": "date-time",
    "time_parsing": "time",
    "time_delta_parsing": "duration",
    "uuid_parsing": "uuid",
    "uuid_version": "uuid",
    "url_parsing": "url",
    "url_scheme": "url",
    "url_syntax_violation": "url",
}
_ENUM_TYPES = {"literal_error", "enum"}


def constraint_of(error: Mapping[str, Any]) -> FieldConstraint | None:
    """The constraint a pydantic error says the value broke, or None (a wrong type, a missing field, a rule
    of our own: nothing a form could pre-check from the error alone)."""
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    if isinstance(ctx.get("constraint"), Mapping):
        return cast(FieldConstraint, {**ctx["constraint"]})  # the keys pydantic passed through
    if kind == "string_pattern_mismatch" and isinstance(ctx.get("pattern"), str):
        return {"pattern": ctx["pattern"]}
    if kind in _ENUM_TYPES and isinstance(ctx.get("expected"), str):
        allowed = allowed_values(ctx["expected"])
        return {"enum": allowed} if allowed else None
    if kind == "string_too_short" and isinstance(ctx.get("min_length"), int):
        return {"minLength": ctx["min_length"]}
    if kind == "string_too_long" and isinstance(ctx.get("max_length"), int):
        return {"maxLength": ctx["max_length"]}
    if kind in _FORMATS:
        return {"format": _FORMATS[kind]}
    return None


def allowed_values(expected: str) -> list[str] | None:
    """The values of pydantic's `expected` text (`"'SENDING' or 'RECEIVING'"`, the reprs of the allowed values
    joined by ", " and " or "), or None when one is not a string: FieldConstraint's `enum` lists strings."""
    values: list[Any] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(expected).readline):
            if token.type in (tokenize.STRING, tokenize.NUMBER):
                values.append(ast.literal_eval(token.string))
            elif token.type == tokenize.NAME and token.string != "or":
                return None  # True, None...: not a string
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    if not values or not all(isinstance(value, str) for value in values):
        return None
    return values


def request_path(parts: Sequence[Any], sent: Any) -> str:
    """The dot path of `parts` (a `loc` after its location) in the value `sent`: each part the value holds
    is kept and followed; a part it does not hold is left out when it is a union's tag (`ACCOUNT`: tags are
    upper case) or a union member's label (`int`, `function-after[...]`, a model's class name), never the
    name of a request field (camelCase); from the first other part on, the path names what the request
    does not hold (a required field it left out, a member a rule asks for) as it is."""
    kept: list[str] = []
    value = sent
    for number, part in enumerate(parts):
        position = _index(part) if isinstance(value, list) else None
        if isinstance(value, Mapping) and isinstance(part, str) and part in value:
            kept.append(part)
            value = value[part]
        elif isinstance(value, list) and position is not None and position < len(value):
            kept.append(str(position))
            value = value[position]
        elif _is_label(part):
            continue
        else:
            kept.extend(str(rest) for rest in parts[number:])
            break
    return ".".join(kept)


_TYPE_LABELS = {"str", "int", "float", "bool", "list", "dict", "none", "decimal", "date", "datetime", "uuid"}


def _is_label(part: Any) -> bool:
    """A name pydantic gives a union member in a `loc` (a discriminator's tag, a type, a model), never a
    request field's (fields are camelCase)."""
    if not isinstance(part, str) or not part:
        return False
    return part in _TYPE_LABELS or "[" in part or part[0].isupper()


def _index(part: Any) -> int | None:
    if isinstance(part, int) and not isinstance(part, bool):
        return part
    if isinstance(part, str) and part.isdigit():
        return int(part)
    return None


def error_entry(
    error: Mapping[str, Any], *, field: str, location: str, message: str, body: Any
) -> dict[str, Any]:
    """The `details.errors` entry of one pydantic error whose `details.fields` entry names `field` at
    `location` (body, query, path, header) with `message`."""
    loc = tuple(error.get("loc", ()))
    if location == "body" and field != "body" and loc[:1] == ("body",):
        field = request_path(loc[1:], body) or field
    return field_error(field, message, constraint_of(error))
