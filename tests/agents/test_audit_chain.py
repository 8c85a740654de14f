"""The audit chain is keyed: HMAC-SHA-256 under a key derived from the master key, so rewriting
a record and re-hashing the chain after it without the key fails verification, whether the rewrite keeps the
records' algorithm (plain SHA-256 passed off as the keyed hash) or relabels them as the plain SHA-256 of
older records (a downgrade). What it does not prove, shown as tests: whoever holds the key can rewrite a chain
that then verifies, and a tail removed with its head rewound is seen only against a head kept elsewhere.
Chains written with the plain hash before revision 0016 still verify (sealed at their head by the
migration), continue keyed, and a rewrite of their plain part is caught by the seal. Exports verify offline
(`platpay agents audit verify --file`). SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from typer.testing import CliRunner

from platpay import cli
from platpay.agents.audit import service as audit
from platpay.db import migrate
from platpay.db.database import Database
from platpay.db.types import JsonType
from platpay.kit import clock
from tests.support.agents import connect, funded_customer, transfer_out

_RECORDS = sa.table(
    "agent_audit_records",
    *(sa.column(name) for name in ("id", "agent_id", "sequence", "previous_hash", "hash", "kind")),
    *(sa.column(name) for name in ("hash_algorithm", "legacy_seal")),
    sa.column("data", JsonType),
)
_HEADS = sa.table("agent_audit_heads", sa.column("agent_id"), sa.column("sequence"), sa.column("hash"))
BEFORE_KEYING = "0015_cardusd"


async def _trail(client, auth) -> tuple[str, list[dict[str, Any]]]:
    """An agent with a few records of every sort (created, code, first use, requested, refused, paused)."""
    world = await funded_customer(client, auth, 100_000)
    agent = await connect(client, auth, world["customer"]["id"])
    agent_id, headers = agent["agent"]["id"], agent["headers"]
    source, bank = world["account"]["id"], world["bank"]["id"]
    assert (await transfer_out(client, headers, source, bank, 1_000)).status_code == 201
    assert (await transfer_out(client, headers, source, bank, 20_000, key="over")).status_code == 403
    assert (await client.patch(f"/agents/{agent_id}", auth=auth, json={"isPaused": True})).status_code == 200
    return agent_id, await _records(client, auth, agent_id)


async def _records(client, auth, agent_id: str) -> list[dict[str, Any]]:
    response = await client.get(
        f"/agents/{agent_id}/audit", auth=auth, params={"limit": 100, "sortOrder": "asc"}
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def _problems(db, agent_id: str) -> list[tuple[int | None, str]]:
    async with db.read() as session:
        return [(p.sequence, p.message) for p in await audit.verify(session, agent_id=agent_id)]


def _content(record: dict[str, Any]) -> dict[str, Any]:
    return {name: record[name] for name in audit.CONTENT_FIELDS}


def _plain(previous: str, record: dict[str, Any]) -> str:
    """What an attacker without the key computes: the chain's published recipe, unkeyed."""
    canonical = json.dumps(_content(record), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((previous + canonical).encode()).hexdigest()


def _keyed(key: bytes):
    def rehash(previous: str, record: dict[str, Any]) -> str:
        canonical = json.dumps(_content(record), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hmac.new(key, (previous + canonical).encode(), hashlib.sha256).hexdigest()

    return rehash


async def _rewrite(
    db, records, *, start: int, rehash, algorithm: str | None = None, move_head: bool = True
) -> None:
    """Store `records` (as the API renders them, possibly edited) from sequence `start` on, every hash
    recomputed by `rehash` from the record before, the head moved to the new last hash (`move_head`): a
    rewrite by someone who can write the database."""
    previous = records[start - 2]["hash"] if start > 1 else audit.GENESIS
    async with db.transaction() as session:
        for record in records[start - 1 :]:
            record["previousHash"], record["hash"] = previous, rehash(previous, record)
            await session.execute(
                _RECORDS.update()
                .where(_RECORDS.c.id == record["id"])
                .values(
                    kind=record["kind"],
                    data=record["data"],
                    previous_hash=record["previousHash"],
                    hash=record["hash"],
                    hash_algorithm=algorithm or record["hashAlgorithm"],
                )
            )
            previous = record["hash"]
        if move_head:
            await session.execute(
                _HEADS.update().where(_HEADS.c.agent_id == records[0]["agentId"]).values(hash=previous)
            )


class TestAKeyedChain:
    async def test_records_name_their_algorithm(self, client, auth, db):
        agent_id, records = await _trail(client, auth)
        assert {r["hashAlgorithm"] for r in records} == {"HMAC-SHA-256"}
        assert {r.get("legacySeal") for r in records} == {None}
        assert await _problems(db, agent_id) == []

    async def test_a_rewrite_rehashed_with_plain_sha256_fails(self, client, auth, db):
        """Before the chain was keyed, exactly this passed verify: edit a record, re-hash it and every later one."""
        agent_id, records = await _trail(client, auth)
        refused = next(r for r in records if r["kind"] == "MONEY_REFUSED")
        refused["kind"] = "MONEY_REQUESTED"  # the refusal disappears
        await _rewrite(db, records, start=refused["sequence"], rehash=_plain)
        assert await _problems(db, agent_id) == [
            (refused["sequence"], "its content does not match its keyed hash (HMAC-SHA-256): altered, or "
                                  "re-hashed without the key")
        ]  # fmt: skip

    async def test_a_rewrite_relabelled_as_the_old_plain_hash_fails(self, client, auth, db):
        """A downgrade: every record relabelled SHA-256 (what records before the keying carry) and the whole
        chain re-hashed plain. No legacy seal vouches for them, and none can be made without the key."""
        agent_id, records = await _trail(client, auth)
        records[4]["data"] = {}
        await _rewrite(db, records, start=1, rehash=_plain, algorithm="SHA-256")
        [(sequence, message)] = await _problems(db, agent_id)
        assert sequence == 1 and "no legacy seal vouches for it" in message
        # ...nor with a seal forged under another key.
        forged = hmac.new(b"x" * 32, b"legacy-seal\x00" + records[-1]["hash"].encode(), hashlib.sha256)
        async with db.transaction() as session:
            await session.execute(
                _RECORDS.update()
                .where(_RECORDS.c.id == records[-1]["id"])
                .values(legacy_seal=forged.hexdigest())
            )
        [(sequence, message)] = await _problems(db, agent_id)
        assert (sequence, message) == (len(records), "its legacy seal does not verify (forged or moved)")

    async def test_a_rewrite_with_the_key_passes(self, client, auth, db):
        """What the chain does not prove: whoever holds the master key (so the audit key derived from it)
        can rewrite any record and re-link the chain after it, and verify passes. The key is the trust."""
        agent_id, records = await _trail(client, auth)
        refused = next(r for r in records if r["kind"] == "MONEY_REFUSED")
        refused["kind"] = "MONEY_REQUESTED"
        await _rewrite(db, records, start=refused["sequence"], rehash=_keyed(audit.chain_key()))
        assert await _problems(db, agent_id) == []

    async def test_a_tail_removed_with_its_head_rewound_is_seen_only_against_a_kept_head(
        self, client, auth, db
    ):
        """What the chain does not prove either: cutting the newest records and rewinding the head to the
        record before them needs no key. Only a copy of the head (sequence and hash) kept elsewhere, compared
        with the chain's end, shows it."""
        agent_id, records = await _trail(client, auth)
        kept_head = (records[-1]["sequence"], records[-1]["hash"])
        async with db.transaction() as session:
            await session.execute(_RECORDS.delete().where(_RECORDS.c.id == records[-1]["id"]))
            await session.execute(
                _HEADS.update()
                .where(_HEADS.c.agent_id == agent_id)
                .values(sequence=records[-2]["sequence"], hash=records[-2]["hash"])
            )
        assert await _problems(db, agent_id) == []
        async with db.read() as session:
            exported = [json.dumps(r) for r in await audit.export(session, agent_id=agent_id)]
        problems, ends = audit.verify_export(exported, key=audit.chain_key())
        assert problems == [] and ends[agent_id] != kept_head


class TestOfflineVerification:
    async def test_an_export_verifies_with_the_key_alone(
        self, client, auth, db, settings, monkeypatch, tmp_path
    ):
        agent_id, records = await _trail(client, auth)
        monkeypatch.setattr(cli, "get_settings", lambda: settings)
        exported = await asyncio.to_thread(CliRunner().invoke, cli.app, ["agents", "audit", "export"])
        assert exported.exit_code == 0, exported.output
        lines = exported.output.splitlines()
        assert [json.loads(line)["hashAlgorithm"] for line in lines] == ["HMAC-SHA-256"] * len(records)
        path = tmp_path / "audit.jsonl"
        path.write_text(exported.output)
        offline = await asyncio.to_thread(
            CliRunner().invoke, cli.app, ["agents", "audit", "verify", "--file", str(path)]
        )
        assert offline.exit_code == 0, offline.output
        assert (
            f"agent {agent_id} ends at sequence {len(records)} with hash {records[-1]['hash']}"
            in offline.output
        )
        # An edited line, re-hashed without the key, fails offline as it fails in the database.
        edited = [json.loads(line) for line in lines]
        edited[2]["data"] = {"tokenPrefix": "someone"}
        previous = edited[1]["hash"]
        for record in edited[2:]:
            record["previousHash"], record["hash"] = previous, _plain(previous, record)
            previous = record["hash"]
        path.write_text("\n".join(json.dumps(r) for r in edited) + "\n")
        broken = await asyncio.to_thread(
            CliRunner().invoke, cli.app, ["agents", "audit", "verify", "--file", str(path)]
        )
        assert broken.exit_code == 1 and f"BROKEN agent {agent_id} at sequence 3" in broken.output, (
            broken.output
        )
        # The API's pages verify the same way (chain order; a null actor, which the API omits, counts as null).
        assert audit.verify_export([json.dumps(r) for r in records], key=audit.chain_key()) == (
            [],
            {agent_id: (len(records), records[-1]["hash"])},
        )
        path.write_text("not json\n")
        garbage = await asyncio.to_thread(
            CliRunner().invoke, cli.app, ["agents", "audit", "verify", "--file", str(path)]
        )
        assert garbage.exit_code == 2 and "line 1 is not JSON" in garbage.output, garbage.output


class TestAChainWrittenBeforeTheKeying:
    """Revision 0016 on a chain of plain SHA-256 records: they keep their hashes (what was exported or
    anchored stays valid), the head's record is sealed, the chain continues keyed and verifies; a rewrite
    of the plain part, re-hashed plain up to the seal, is caught by the seal."""

    async def _written_before_the_keying(self, client, auth, db, database_url) -> tuple[str, list[dict]]:
        agent_id, records = await _trail(client, auth)
        previous = audit.GENESIS
        for record in records:  # as the code before revision 0016 hashed them
            record["previousHash"], record["hash"] = previous, _plain(previous, record)
            previous = record["hash"]
        config = migrate.alembic_config(database_url)
        await asyncio.to_thread(command.downgrade, config, BEFORE_KEYING)
        try:
            old_records = sa.table(
                "agent_audit_records", *(sa.column(n) for n in ("id", "previous_hash", "hash"))
            )
            async with db.transaction() as session:
                for record in records:
                    await session.execute(
                        old_records.update()
                        .where(old_records.c.id == record["id"])
                        .values(previous_hash=record["previousHash"], hash=record["hash"])
                    )
                await session.execute(
                    _HEADS.update().where(_HEADS.c.agent_id == agent_id).values(hash=previous)
                )
        finally:
            await migrate.upgrade_async(database_url)
        return agent_id, records

    async def test_it_still_verifies_and_continues_keyed(self, client, auth, db, database_url):
        agent_id, old = await self._written_before_the_keying(client, auth, db, database_url)
        fresh = Database(database_url)  # the schema changed under the app's pooled connections
        try:
            async with fresh.read() as session:
                exported = await audit.export(session, agent_id=agent_id)
                assert await audit.verify(session, agent_id=agent_id) == []
            assert [(r["hash"], r["hashAlgorithm"]) for r in exported] == [
                (r["hash"], "SHA-256") for r in old
            ]
            seal = hmac.new(audit.chain_key(), b"legacy-seal\x00" + old[-1]["hash"].encode(), hashlib.sha256)
            assert [r["legacySeal"] for r in exported] == [None] * (len(old) - 1) + [seal.hexdigest()]
            async with fresh.transaction() as session:
                for kind in ("AGENT_UNPAUSED", "AGENT_RENAMED"):
                    await audit.record(session, tenant_id=old[0]["tenantId"], agent_id=agent_id, kind=kind,
                                       now=clock.real_now())  # fmt: skip
            async with fresh.read() as session:
                chain = await audit.export(session, agent_id=agent_id)
                assert await audit.verify(session, agent_id=agent_id) == []
            assert [r["hashAlgorithm"] for r in chain[len(old) :]] == ["HMAC-SHA-256"] * 2
            assert chain[len(old)]["previousHash"] == old[-1]["hash"]
            lines = [json.dumps(r) for r in chain]
            assert audit.verify_export(lines, key=audit.chain_key())[0] == []

            # A rewrite of the plain part, re-hashed plain to the seal, and the keyed part re-linked after
            # it would need the key; the plain part alone no longer matches its seal.
            chain[1]["data"] = {"edited": True}
            await _rewrite(fresh, chain[: len(old)], start=2, rehash=_plain, move_head=False)
            async with fresh.read() as session:
                [problem] = await audit.verify(session, agent_id=agent_id)
            assert (problem.sequence, problem.message) == (
                len(old),
                "its legacy seal does not verify (forged or moved)",
            )
            # Dropping the seal instead leaves plain records nothing vouches for.
            async with fresh.transaction() as session:
                await session.execute(
                    _RECORDS.update().where(_RECORDS.c.agent_id == agent_id).values(legacy_seal=None)
                )
            async with fresh.read() as session:
                [problem] = await audit.verify(session, agent_id=agent_id)
            assert problem.sequence == 1 and "no legacy seal vouches for it" in problem.message
        finally:
            await fresh.dispose()


@pytest.mark.parametrize("algorithm", ["SHA-1", "", "hmac-sha-256"])
def test_an_unknown_algorithm_is_a_break(algorithm):
    record = {
        "id": "AgentAuditRecord:1", "tenantId": "Tenant:t", "agentId": "Agent:a", "sequence": 1,
        "kind": "AGENT_CREATED", "actor": None, "occurredAt": "2026-12-01T00:00:00.000000Z", "data": {},
        "previousHash": audit.GENESIS, "hashAlgorithm": algorithm, "legacySeal": None,
    }  # fmt: skip
    record["hash"] = _plain(audit.GENESIS, record)
    problem = audit.check_records("Agent:a", [record], key=audit.chain_key())
    assert problem is not None and problem.message == f"unknown hashAlgorithm {algorithm!r}"


def test_a_system_record_verifies_without_its_null_actor():
    """The API omits null fields: a record of the system (actor null) verifies with or without it."""
    record = {
        "id": "AgentAuditRecord:1", "tenantId": "Tenant:t", "agentId": "Agent:a", "sequence": 1,
        "kind": "ACTION_EXPIRED", "actor": None, "occurredAt": "2026-12-01T00:00:00.000000Z", "data": {},
        "previousHash": audit.GENESIS, "hashAlgorithm": "HMAC-SHA-256",
    }  # fmt: skip
    record["hash"] = _keyed(audit.chain_key())(audit.GENESIS, record)
    as_the_api_shows_it = {name: value for name, value in record.items() if value is not None}
    assert audit.verify_export([json.dumps(as_the_api_shows_it)], key=audit.chain_key())[0] == []
    assert audit.verify_export([json.dumps(record)], key=b"y" * 32)[0] != []
