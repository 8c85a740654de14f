"""kit/json_body.py alone: what the one request-body parser accepts and how it names what it refuses."""

from __future__ import annotations

import json

import pytest

from platpay.errors import InvalidInput, UnsupportedMediaType
from platpay.kit import json_body


def refused(raw: bytes) -> dict[str, str]:
    with pytest.raises(InvalidInput) as error:
        json_body.parse(raw)
    assert error.value.status == 400 and error.value.code == "INVALID_INPUT"
    return {entry["field"]: entry["message"] for entry in error.value.details["fields"]}


class TestParse:
    @pytest.mark.parametrize(
        "value",
        [{"amount": 100, "source": {"accountId": "a"}}, [1, 2.5, None, True, "é✓"], {}, "text", 2**70, -0.0],
    )
    def test_json_as_json_loads_reads_it(self, value):
        assert json_body.parse(json.dumps(value, ensure_ascii=False).encode()) == value

    def test_a_key_given_twice_is_named_however_deep(self):
        raw = b'{"a": 1, "a": 2, "b": {"c": [{"d": 1, "e": 2, "d": 3, "d": 4}]}, "f": {"g": 1, "g": 1}}'
        assert list(refused(raw)) == ["a", "b.c.0.d", "f.g"]

    def test_the_same_key_in_different_objects_is_fine(self):
        assert json_body.parse(b'{"a": {"id": 1}, "b": {"id": 2}}') == {"a": {"id": 1}, "b": {"id": 2}}

    @pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
    def test_nan_and_infinity_are_not_json(self, constant):
        assert "not a JSON number" in refused(b'{"amount": ' + constant + b"}")["body"]

    @pytest.mark.parametrize(
        ("raw", "says"),
        [
            ('{"a": 1}'.encode("utf-16-le"), "UTF-16"),
            ('{"a": 1}'.encode("utf-16-be"), "UTF-16"),
            ('{"a": 1}'.encode("utf-16"), "UTF-16"),
            ('{"a": 1}'.encode("utf-32"), "UTF-32"),
            (b'\xef\xbb\xbf{"a": 1}', "byte order mark"),
            (b'{"a": "\xff"}', "not valid UTF-8: byte 0xff at offset 7"),
            (b'{"a": "\xed\xa0\x80"}', "not valid UTF-8"),  # a surrogate encoded as UTF-8 (CESU)
            (b'{"a": "\\ud800"}', "unpaired surrogate"),
            (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
            (b'{"a": 1' + b"0" * 5000 + b"}", "too many digits"),
            (b'{"a": 1} x', "not valid JSON: Extra data"),
            (b"", "not valid JSON"),
        ],
    )
    def test_a_body_that_is_not_utf8_json_is_refused_saying_why(self, raw, says):
        messages = refused(raw)
        assert any(says in message for message in messages.values()), messages

    def test_an_unpaired_surrogate_is_named_by_its_path_a_key_by_its_escape(self):
        assert list(refused(b'{"a": {"b": ["ok", "\\udc00"]}, "k\\ud800": 1}')) == ["a.b.1", "k\\ud800"]

    def test_a_surrogate_pair_is_one_character(self):
        assert json_body.parse(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


class TestCharset:
    @pytest.mark.parametrize(
        "content_type",
        [None, "application/json", "application/json; charset=utf-8", 'application/json;charset="UTF-8"'],
    )
    def test_utf8_or_none_declared_is_fine(self, content_type):
        json_body.check_charset(content_type)

    @pytest.mark.parametrize("charset", ["utf-16", "latin-1", "us-ascii"])
    def test_another_charset_is_415(self, charset):
        with pytest.raises(UnsupportedMediaType):
            json_body.check_charset(f"application/json; charset={charset}")
