"""A hash chain's canonical form (platpay/kit/crypto/chain.py): the bytes a record's hash covers must be the
standard library's sorted, compact JSON whatever writes them, or every record written before would fail its
verification. orjson writes plain values; these check that its bytes are the standard library's, on values
generated to reach what differs between the two (escapes, non-ASCII, key order, big integers, floats)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum, StrEnum

from hypothesis import given, settings
from hypothesis import strategies as st

from platpay.agents.audit import service as audit
from platpay.kit.crypto import chain


def _standard(content: object) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _VALUES, max_size=6))
def test_the_canonical_bytes_are_the_standard_librarys(content):
    assert chain.canonical(content) == _standard(content)


class Kind(StrEnum):
    MONEY = "MONEY"


class Plain(Enum):
    ONE = 1


def test_what_orjson_would_spell_differently_goes_to_the_standard_library():
    for content in (
        {"rate": 1e-05, "big": 1e16},  # orjson: 1e-5, 1e16
        {"kind": Kind.MONEY},  # a subclass of str
        {"nested": {"tuple": (1, 2)}},  # a tuple: a list in JSON
    ):
        assert not chain.plain(content)
        assert chain.canonical(content) == _standard(content)
    beyond = {"n": 2**64 + 1, "m": -(2**64)}  # plain, but beyond orjson's integers: refused there
    assert chain.plain(beyond) and chain.canonical(beyond) == _standard(beyond)
    assert chain.plain({"a": [1, "x", None, True, {"b": -(2**63)}]})


def test_what_the_standard_library_refuses_is_still_refused():
    for content in ({"when": datetime.now(UTC)}, {"enum": Plain.ONE}, {"set": {1}}):
        try:
            _standard(content)
        except TypeError:
            pass
        else:
            raise AssertionError(f"json.dumps accepted {content}")
        try:
            chain.canonical(content)
        except TypeError:
            continue
        raise AssertionError(f"canonical accepted {content}")


@settings(max_examples=300, deadline=None)
@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(min_value=-23 * 60, max_value=23 * 60),
)
def test_a_timestamp_is_strftimes(moment, offset_minutes):
    aware = moment.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
    assert chain.timestamp(aware) == aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=6),
        _VALUES
        | st.datetimes(timezones=st.just(UTC))
        | st.sampled_from([Kind.MONEY, Plain.ONE, 2**63, 2**64 - 1, -(2**63), 2**64, -(2**63) - 1]),
        max_size=6,
    )
)
def test_an_audit_records_data_is_stored_as_the_standard_library_would_store_it(data):
    """The agents' audit trail stores (and hashes) a copy of a record's data: orjson's for plain values, the
    standard library's round trip (`default=str`) for the rest; the same values either way."""
    assert audit._as_stored(data) == json.loads(json.dumps(data, default=str))
