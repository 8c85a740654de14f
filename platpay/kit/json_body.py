"""The one parser of JSON request bodies (kit/routing.py calls it for every operation that takes one).

Stricter than `json.loads(bytes)`, which FastAPI would use: RFC 8259 requires UTF-8 between systems, so a
body in UTF-16 or UTF-32, one that starts with a byte order mark, one that is not valid UTF-8, and one whose
Content-Type names another charset are refused instead of being decoded by guesswork. A key given twice in
one object is refused (`json.loads` keeps the last: `{"amount": -5, "amount": 100}` moved 100, while a
proxy or an audit log reading the first saw another request than the one executed), and so are `NaN` and
`Infinity`, which are not JSON.

The duplicate check costs only on objects: `object_pairs_hook` builds each dict from its pairs and compares
the lengths (bench/json_body.py); the paths of the keys given twice are worked out by a second parse, only
when there is one.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from platpay.errors import InvalidInput, UnsupportedMediaType

_UTF8_NAMES = {"utf-8", "utf8"}
_NOT_UTF8 = {
    "utf-16-be": "UTF-16",
    "utf-16-le": "UTF-16",
    "utf-16": "UTF-16",
    "utf-32-be": "UTF-32",
    "utf-32-le": "UTF-32",
    "utf-32": "UTF-32",
}


def refused(field: str, message: str) -> InvalidInput:
    """A 400 in the shape of a framework validation error: `details.fields` names where the body is wrong."""
    entry = {"field": field, "location": "body", "message": message}
    return InvalidInput(f"invalid input: {field}: {message}", details={"fields": [entry]})


def _not_json(constant: str) -> Any:
    raise refused("body", f"{constant} is not a JSON number: numbers must be finite")


def charset_of(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header, lowercased and unquoted (None when absent)."""
    for parameter in (content_type or "").split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').strip().lower()
    return None


def check_charset(content_type: str | None) -> None:
    """415 when the Content-Type names a charset other than UTF-8 (`application/json; charset=utf-16`)."""
    charset = charset_of(content_type)
    if charset is not None and charset not in _UTF8_NAMES:
        raise UnsupportedMediaType(
            f"send JSON as UTF-8, not {charset} (RFC 8259)",
            details={"expected": "application/json; charset=utf-8", "received": content_type},
        )


def _text(body: bytes) -> str:
    if body.startswith(codecs.BOM_UTF8):
        raise refused("body", "starts with a byte order mark: send UTF-8 JSON without one (RFC 8259)")
    encoding = json.detect_encoding(body)
    if encoding in _NOT_UTF8:
        raise refused("body", f"is {_NOT_UTF8[encoding]}: send JSON as UTF-8 (RFC 8259)")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = body[error.start : error.start + 1].hex()
        raise refused("body", f"is not valid UTF-8: byte 0x{bad} at offset {error.start}") from None


class _DuplicateKey(Exception):
    """A key given twice in one object: the fast parse stops there (the paths are found by a second one)."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey
    return obj


# Built once: json.loads(text, object_pairs_hook=...) would build a decoder (and its scanner) per call.
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs, parse_constant=_not_json)


class _Repeated(dict[str, Any]):
    """An object in which some key was given more than once (its last value kept)."""

    __slots__ = ("repeated",)
    repeated: list[str]


def _flag_repeated(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    flagged = _Repeated(obj)
    flagged.repeated = []
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen and key not in flagged.repeated:
            flagged.repeated.append(key)
        seen.add(key)
    return flagged


def parse(body: bytes) -> Any:
    """The JSON value of a request body, or an InvalidInput (400) naming what is wrong with it."""
    text = _text(body)
    try:
        value = _DECODER.decode(text)
    except _DuplicateKey:
        value = json.loads(text, object_pairs_hook=_flag_repeated)  # parsed once already: it is valid
        raise _duplicates(value) from None
    except json.JSONDecodeError as error:
        raise refused("body", f"request body is not valid JSON: {error.msg} at offset {error.pos}") from None
    except RecursionError:
        raise refused("body", "request body is nested too deeply") from None
    except ValueError:  # an integer of more digits than Python converts (sys.int_info)
        raise refused("body", "request body holds a number with too many digits") from None
    # Text decoded from valid UTF-8 holds no surrogate; only a `\ud800` escape without its pair makes one,
    # a string no UTF-8 encoder (nor PostgreSQL) takes: look for them only where such an escape is.
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        lone = _lone_surrogates(value, "")
        if lone:
            message = "is not Unicode text: it holds an unpaired surrogate escape (\\ud800-\\udfff)"
            fields = [{"field": path, "location": "body", "message": message} for path in lone]
            raise InvalidInput(f"invalid input: {lone[0]}: {message}", details={"fields": fields})
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _named(key: str) -> str:
    """A key as a path names it: an unpaired surrogate written as its escape (an answer must be UTF-8)."""
    return key if _is_text(key) else key.encode("utf-8", "backslashreplace").decode()


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lone_surrogates(value: Any, prefix: str) -> list[str]:
    """The dotted paths of the strings (keys included) holding an unpaired surrogate."""
    found: list[str] = []
    if isinstance(value, str):
        return [] if _is_text(value) else [prefix.rstrip(".") or "body"]
    if isinstance(value, dict):
        for key, item in value.items():
            if not _is_text(key):
                found.append(f"{prefix}{_named(key)}")
            found += _lone_surrogates(item, f"{prefix}{_named(key)}.")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _lone_surrogates(item, f"{prefix}{index}.")
    return found


def _duplicates(value: Any) -> InvalidInput:
    fields = [
        {"field": path, "location": "body", "message": "is given more than once: each key once per object"}
        for path in _repeated_paths(value, "")
    ]
    summary = "; ".join(entry["field"] for entry in fields[:5])
    return InvalidInput(f"invalid input: duplicate keys in the body: {summary}", details={"fields": fields})


def _repeated_paths(value: Any, prefix: str) -> list[str]:
    """The dotted paths (`source.accountId`, `items.0.amount`) of every key given twice, in body order."""
    found: list[str] = []
    if isinstance(value, dict):
        if isinstance(value, _Repeated):
            found += [f"{prefix}{_named(key)}" for key in value.repeated]
        for key, item in value.items():
            found += _repeated_paths(item, f"{prefix}{_named(key)}.")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _repeated_paths(item, f"{prefix}{index}.")
    return found
