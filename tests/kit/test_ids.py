"""Identifiers (platpay.kit.ids): `<Type>:<uuid7>` in the canonical UUID text, time-ordered."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

from platpay.kit import ids


def test_an_id_is_the_prefix_and_a_canonical_version_7_uuid() -> None:
    made = [ids.new_id("Transaction") for _ in range(2000)]
    for value in made:
        assert ids.is_id(value, "Transaction"), value
        text = value.split(":", 1)[1]
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # the canonical form: lower-case hex, dashes where uuid puts them
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
    assert len(set(made)) == len(made)


def test_ids_sort_in_the_order_they_were_made_and_carry_their_millisecond() -> None:
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    made = [ids.new_id("Job") for _ in range(5000)]  # more than the counter's 4096 in one millisecond
    after = datetime.now(UTC) + timedelta(milliseconds=5)
    assert made == sorted(made)
    assert ids.first_at("Job", before) < made[0]
    assert made[-1] < ids.first_at("Job", after)
    ms = int(made[0].split(":", 1)[1].replace("-", "")[:12], 16)
    assert abs(ms - before.timestamp() * 1000) < 1000


def test_uuid7_and_new_id_share_one_sequence() -> None:
    first = ids.uuid7()
    second = ids.new_id("X").split(":", 1)[1]
    third = ids.uuid7()
    assert str(first) < second < str(third)
    assert re.fullmatch(ids.UUID_RE, second)
