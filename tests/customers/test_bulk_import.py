"""Bulk customer import: POST /customers/bulk/csv and GET /customers/bulk/jobs/{jobId}.

Rows go through the same validation and creation path as POST /customers; the job runner imports the
file in chunks (100 rows here), each chunk committing its customers together with the progress; a crashed
or superseded attempt commits nothing and the import resumes at the last committed row.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, text

from platpay.accounts.models import InternalAccountRow
from platpay.customers.bulk.models import BulkImportFileChunkRow, BulkImportJobRow
from platpay.customers.models import CustomerRow
from platpay.jobs.models import JobRow
from platpay.jobs.runner import JobRunner
from platpay.kit import clock
from platpay.ledger.models import LedgerAccountRow
from tests.factories import create_platform
from tests.support.bulk_import import (
    DOMAIN,
    HEADER,
    company,
    csv_bytes,
    import_to_the_end,
    job_of,
    person,
    upload,
    valid_rows,
)
from tests.support.jobs import run_jobs_until

CHUNK_ROWS = 100
MAX_FILE_BYTES = 300_000


@pytest.fixture
def settings(settings):
    return settings.model_copy(
        update={"bulk_import_chunk_rows": CHUNK_ROWS, "bulk_import_max_bytes": MAX_FILE_BYTES}
    )


async def run_one_job(runner: JobRunner) -> bool:
    """Claim and run the next due job, whatever its kind; False when none is due."""
    claimed = await runner.claim(1)
    for job, token in claimed:
        await runner.execute(job, token)
    return bool(claimed)


async def counts(db) -> dict[str, int]:
    async with db.read() as session:
        customers = await session.scalar(select(func.count()).select_from(CustomerRow))
        distinct_ids = await session.scalar(
            select(func.count(func.distinct(CustomerRow.platform_customer_id)))
        )
        accounts = await session.scalar(
            select(func.count())
            .select_from(InternalAccountRow)
            .where(InternalAccountRow.customer_id.is_not(None))
        )
        ledger = await session.scalar(
            select(func.count())
            .select_from(LedgerAccountRow)
            .where(
                LedgerAccountRow.id.in_(
                    select(InternalAccountRow.id).where(InternalAccountRow.customer_id.is_not(None))
                )
            )
        )
        imports = await session.scalar(select(func.count()).select_from(BulkImportJobRow))
        import_jobs = await session.scalar(
            select(func.count()).select_from(JobRow).where(JobRow.kind == "customers.bulk_import")
        )
    return {
        "customers": customers,
        "distinct_platform_ids": distinct_ids,
        "internal_accounts": accounts,
        "ledger_accounts": ledger,
        "imports": imports,
        "import_jobs": import_jobs,
    }


class TestImport:
    async def test_a_thousand_rows_with_ten_bad_ones(self, client, auth, runner, receiver, db):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        taken = await client.post(
            "/customers", auth=auth, json={"customerType": "INDIVIDUAL", "platformCustomerId": "cust-444"}
        )
        assert taken.status_code == 201
        rows = valid_rows(1000)
        bad = {  # row -> (its cells, the field named, the code POST /customers answers)
            5: (person(5, birthDate="1990-02-30"), "birthDate", "INVALID_INPUT"),
            120: (person(120, city=""), "city", "INVALID_INPUT"),
            250: (company(250, country="ZZ"), "country", "INVALID_INPUT"),
            333: (person(333, platformCustomerId="cust-330"), "platformCustomerId", "CONFLICT"),
            444: (person(444), "platformCustomerId", "CONFLICT"),
            555: (person(555, email="not-an-email"), "email", "INVALID_INPUT"),
            666: (person(666, umaAddress="$user666@elsewhere.example"), "umaAddress", "INVALID_UMA_ADDRESS"),
            777: (person(777, customerType="ROBOT"), "customerType", "INVALID_INPUT"),
            880: (company(880, businessLegalName=""), "businessLegalName", "INVALID_INPUT"),
            999: (person(999, fullName="J@ne Doe"), "fullName", "INVALID_INPUT"),
        }
        for number, (cells, _, _) in bad.items():
            rows[number - 1] = cells

        response = await upload(client, auth, csv_bytes(rows))
        assert response.status_code == 202, response.text
        accepted = response.json()
        assert accepted["status"] == "PENDING" and accepted["jobId"].startswith("Job:")
        job_id = accepted["jobId"]
        pending = await job_of(client, auth, job_id)
        assert pending["progress"] == {"total": 1000, "processed": 0, "successful": 0, "failed": 0}
        assert pending["errors"] == [] and "completedAt" not in pending

        seen = []  # progress advances chunk by chunk while the import runs
        while (state := await job_of(client, auth, job_id))["status"] in ("PENDING", "PROCESSING"):
            assert await run_one_job(runner)
            state = await job_of(client, auth, job_id)
            if state["status"] == "PROCESSING":
                assert "completedAt" not in state
                assert (
                    state["progress"]["processed"]
                    == state["progress"]["successful"] + state["progress"]["failed"]
                )
            seen.append(state["progress"]["processed"])
        assert sorted(set(seen) - {0}) == list(range(CHUNK_ROWS, 1001, CHUNK_ROWS))

        done = await job_of(client, auth, job_id)
        assert done["status"] == "COMPLETED" and done["completedAt"] >= done["createdAt"]
        assert done["progress"] == {"total": 1000, "processed": 1000, "successful": 990, "failed": 10}
        assert done["omittedErrorCount"] == 0
        listed = (await client.get("/customers", auth=auth)).json()["totalCount"]
        assert listed == 1 + 990  # the customer created beforehand, and the import's
        assert len(done["errors"]) == 10
        for error, (number, (cells, field, code)) in zip(done["errors"], sorted(bad.items()), strict=True):
            assert error["details"]["row"] == number, error
            assert error["details"]["platformCustomerId"] == cells["platformCustomerId"], error
            assert error["correlationId"] == cells["platformCustomerId"]
            assert field in [f["field"] for f in error["details"]["fields"]], error
            assert error["code"] == code, error
            assert error["message"].startswith(f"row {number}: ") and field in error["message"]

        imported = (
            await client.get("/customers", auth=auth, params={"platformCustomerId": "cust-10"})
        ).json()["data"][0]
        assert (
            imported["customerType"] == "BUSINESS" and imported["businessInfo"]["legalName"] == "Acme 10 Inc."
        )
        assert imported["address"] == {
            "line1": "500 Market St",
            "line2": "Suite 1",
            "city": "San Francisco",
            "state": "CA",
            "postalCode": "94105",
            "country": "US",
        }
        one = (await client.get("/customers", auth=auth, params={"platformCustomerId": "cust-7"})).json()[
            "data"
        ][0]
        assert one["fullName"] == "Jane O'Doe-Smith" and one["umaAddress"] == f"$user7@{DOMAIN}"
        assert one["kycStatus"] == "PENDING" and one["currencies"] == ["USD", "USDC", "USDB"]
        found = await counts(db)
        # USD, USDC, and in USDB the holding account and the embedded wallet
        assert found["internal_accounts"] == found["ledger_accounts"] == 4 * 991

        await run_jobs_until(runner, lambda: len(receiver.of_type("BULK_UPLOAD.COMPLETED")) == 1)
        [delivered] = receiver.of_type("BULK_UPLOAD.COMPLETED")
        assert delivered.json["data"] == done  # the job exactly as GET returns it
        async with db.read() as session:  # the stored file is dropped once imported
            assert await session.scalar(select(func.count()).select_from(BulkImportFileChunkRow)) == 0

    async def test_mixed_line_endings_quoting_bom_and_blank_lines(self, client, auth, runner):
        data = (
            "\ufeffUMAADDRESS,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country\n"
            f'$a1@{DOMAIN},a1,INDIVIDUAL,"Zoë Åström",1980-05-06,"1 Rue, Bât. B",Paris,IDF,75001,FR\r\n'
            "\r\n"
            f'$a2@{DOMAIN},a2,INDIVIDUAL,Ann Lee,1970-01-02,"Flat 2\nHigh St",London,LDN,SW1A 1AA,GB\r'
            f"$a3@{DOMAIN},a3,INDIVIDUAL,Bo Li,1960-03-04,9 Road,Austin,TX,73301,US"
        ).encode()
        job_id = (await upload(client, auth, data)).json()["jobId"]
        done = await import_to_the_end(client, auth, runner, job_id)
        assert done["progress"] == {"total": 3, "processed": 3, "successful": 2, "failed": 1}, done
        zoe = (await client.get("/customers", auth=auth, params={"platformCustomerId": "a1"})).json()["data"][
            0
        ]
        assert zoe["fullName"] == "Zoë Åström" and zoe["address"]["line1"] == "1 Rue, Bât. B"
        # the quoted line break stays in its cell, which POST /customers refuses in an address line
        [error] = done["errors"]
        assert error["details"]["row"] == 2 and error["details"]["fields"][0]["field"] == "addressLine1"

    async def test_rows_with_a_wrong_number_of_cells_or_empty_ids_are_named_by_row(
        self, client, auth, runner
    ):
        header = "umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country\n"
        data = (
            header
            + f"$ok@{DOMAIN},ok-1,INDIVIDUAL,Al Bo,1980-01-01,1 St,Town,ST,1,US\n"
            + f"$short@{DOMAIN},short-1,INDIVIDUAL,Al Bo\n"
            + f"$noid@{DOMAIN},,INDIVIDUAL,Al Bo,1980-01-01,1 St,Town,ST,1,US\n"
        ).encode()
        job_id = (await upload(client, auth, data)).json()["jobId"]
        done = await import_to_the_end(client, auth, runner, job_id)
        assert done["progress"]["successful"] == 1 and done["progress"]["failed"] == 2
        short, no_id = done["errors"]
        assert short["correlationId"] == "short-1"
        assert {f["field"] for f in short["details"]["fields"]} >= {"row", "birthDate", "city", "country"}
        assert no_id["correlationId"] == "row 3" and no_id["details"]["platformCustomerId"] is None
        assert no_id["details"]["fields"] == [{"field": "platformCustomerId", "message": "is required"}]

    async def test_a_row_whose_keys_are_both_taken_is_a_conflict_naming_both(self, client, auth, runner):
        existing = person(1)
        created = await client.post(
            "/customers",
            auth=auth,
            json={
                "customerType": "INDIVIDUAL",
                "platformCustomerId": existing["platformCustomerId"],
                "umaAddress": existing["umaAddress"],
            },
        )
        assert created.status_code == 201, created.text
        rows = [person(1), person(2), person(2), person(3, umaAddress=person(2)["umaAddress"])]
        job_id = (await upload(client, auth, csv_bytes(rows))).json()["jobId"]
        done = await import_to_the_end(client, auth, runner, job_id)
        assert done["progress"] == {"total": 4, "processed": 4, "successful": 1, "failed": 3}, done
        taken, repeated, uma_only = done["errors"]
        for error, row in ((taken, 1), (repeated, 3)):  # an existing customer's keys, an earlier row's
            assert error["details"]["row"] == row and error["code"] == "CONFLICT", error
            fields = [f["field"] for f in error["details"]["fields"]]
            assert fields == ["platformCustomerId", "umaAddress"], error
        assert uma_only["code"] == "UMA_ADDRESS_EXISTS", uma_only
        assert [f["field"] for f in uma_only["details"]["fields"]] == ["umaAddress"]

    async def test_names_in_any_script_are_imported_and_control_characters_refused(
        self, client, auth, runner
    ):
        names = ["Jose\u0301 García", "राहुल शर्मा", "สมชาย ใจดี", "Seán O’Brien", "Ana\u202eMaria", "J@ne"]
        rows = [person(n, fullName=name) for n, name in enumerate(names, start=1)]
        rows.append(company(7, businessLegalName="Acme\u200b Inc."))
        job_id = (await upload(client, auth, csv_bytes(rows))).json()["jobId"]
        done = await import_to_the_end(client, auth, runner, job_id)
        assert done["progress"]["successful"] == 4, done
        for n, name in enumerate(names[:4], start=1):
            found = await client.get("/customers", auth=auth, params={"platformCustomerId": f"cust-{n}"})
            assert found.json()["data"][0]["fullName"] == name
        override, symbol, zero_width = done["errors"]
        assert override["details"]["fields"] == [
            {
                "field": "fullName",
                "message": "must not contain control or formatting characters such as line breaks, tabs or "
                "direction overrides (found U+202E)",
            }
        ]
        assert symbol["details"]["fields"][0]["message"].startswith("must contain only letters")
        assert zero_width["details"]["fields"][0]["field"] == "businessLegalName"
        assert "(found U+200B)" in zero_width["details"]["fields"][0]["message"]

    async def test_every_problem_of_a_row_is_named_at_once(self, client, auth, runner):
        rows = [
            person(1, city="", fullName="J@ne", birthDate="2999-01-01"),  # an empty cell and rule problems
            person(2, customerType="ROBOT", fullName="R2D2", country="ZZ"),  # a schema problem and rules
            person(3, email="x", addressLine1=" 1 Main St", postalCode="1" * 21),  # both, in the address
            company(4, businessLegalName="", businessTaxId="12#34"),
        ]
        job_id = (await upload(client, auth, csv_bytes(rows))).json()["jobId"]
        done = await import_to_the_end(client, auth, runner, job_id)
        assert done["progress"]["failed"] == 4, done
        named = [{f["field"] for f in error["details"]["fields"]} for error in done["errors"]]
        assert named == [
            {"city", "fullName", "birthDate"},
            {"customerType", "fullName", "country"},
            {"email", "addressLine1", "postalCode"},
            {"businessLegalName", "businessTaxId"},
        ], done["errors"]
        assert [error["code"] for error in done["errors"]] == ["INVALID_INPUT"] * 4

    async def test_errors_beyond_the_first_thousand_are_counted(self, client, auth, runner, settings):
        rows = [person(n, birthDate="not-a-date") for n in range(1, 1203)]
        job_id = (await upload(client, auth, csv_bytes(rows))).json()["jobId"]
        done = await import_to_the_end(client, auth, runner, job_id)
        assert done["progress"]["failed"] == 1202
        assert len(done["errors"]) == 1000 and done["omittedErrorCount"] == 202
        assert [e["details"]["row"] for e in done["errors"]] == list(range(1, 1001))


def _rejected(response, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"status", "code", "message", "details"} and body["status"] == status
    return body


class TestUploadRejections:
    @pytest.mark.parametrize(
        ("data", "content_type", "words"),
        [
            (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png", "not CSV"),
            (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "text/csv", "not UTF-8"),
            (b"PK\x03\x04\x14\x00\x06\x00", "application/octet-stream", "ZIP"),
            (b"umaAddress,platformCustomerId,customerType\n$a@x,p,\x00\x01\x02\n", "text/csv", "binary"),
            (
                b"umaAddress,platformCustomerId,customerType\n$a@x,\xff\xfe,INDIVIDUAL\n",
                "text/csv",
                "not UTF-8",
            ),
            (
                b'umaAddress,platformCustomerId,customerType\n"$a@x"x,p,INDIVIDUAL\n',
                "text/csv",
                "not valid CSV",
            ),
            (b"", "text/csv", "empty"),
            (b"\r\n\r\n", "text/csv", "empty"),
            (b"umaAddress,platformCustomerId,customerType,fullName\r\n", "text/csv", "no data rows"),
            (b'{"customers": []}', "application/json", "not CSV"),
        ],
    )
    async def test_what_is_not_a_csv_of_customers_is_refused(
        self, client, auth, db, data, content_type, words
    ):
        body = _rejected(await upload(client, auth, data, content_type=content_type))
        assert body["code"] == "INVALID_INPUT" and words in body["message"], body
        assert body["details"]["fields"][0]["field"] == "file"
        assert (await counts(db))["imports"] == (await counts(db))["import_jobs"] == 0

    async def test_missing_required_columns_are_listed(self, client, auth, db):
        body = _rejected(await upload(client, auth, b"platformCustomerId,fullName\np1,Al Bo\n"))
        assert body["details"]["missingColumns"] == ["umaAddress", "customerType"]
        header = [
            "umaAddress",
            "platformCustomerId",
            "customerType",
            "fullName",
            "addressLine1",
            "city",
            "postalCode",
            "country",
        ]
        data = csv_bytes([{k: v for k, v in person(1).items() if k in header}], header=header)
        body = _rejected(await upload(client, auth, data))
        assert body["details"]["missingColumns"] == ["birthDate", "state"]
        assert body["details"]["missingColumnsFor"] == {"INDIVIDUAL": ["birthDate", "state"]}
        assert "birthDate" in body["message"] and "state" in body["message"]
        assert (await counts(db))["imports"] == 0

    async def test_business_columns_are_not_required_of_a_file_of_individuals(self, client, auth, runner):
        header = [c for c in HEADER if not c.startswith("business")]
        data = csv_bytes([{k: v for k, v in person(1).items() if k in header}], header=header)
        response = await upload(client, auth, data)
        assert response.status_code == 202, response.text

    async def test_unknown_columns_are_refused(self, client, auth):
        rows = [{**person(1), "emial": "x"}]
        body = _rejected(await upload(client, auth, csv_bytes(rows, header=[*HEADER, "emial"])))
        assert body["details"]["unknownColumns"] == ["emial"]

    async def test_a_file_over_the_size_limit_is_400_and_a_body_far_over_it_413(self, client, auth, db):
        data = csv_bytes(valid_rows(3000))
        assert MAX_FILE_BYTES < len(data) < MAX_FILE_BYTES + 1_048_576
        body = _rejected(await upload(client, auth, data))
        assert body["details"]["limitBytes"] == MAX_FILE_BYTES and "limit" in body["message"]
        huge = b"umaAddress,platformCustomerId,customerType\n" + b"x" * (MAX_FILE_BYTES + 1_100_000)
        assert _rejected(await upload(client, auth, huge), 413)["code"] == "PAYLOAD_TOO_LARGE"
        assert (await counts(db))["imports"] == 0

    async def test_a_body_that_is_not_multipart_is_415(self, client, auth, db):
        response = await client.post("/customers/bulk/csv", auth=auth, json={"file": "a,b"})
        assert _rejected(response, 415)["details"]["expected"] == "multipart/form-data"
        raw = await client.post(
            "/customers/bulk/csv",
            auth=auth,
            content=csv_bytes(valid_rows(1)),
            headers={"Content-Type": "text/csv"},
        )
        assert _rejected(raw, 415)["code"] == "UNSUPPORTED_MEDIA_TYPE"
        assert (await counts(db))["imports"] == 0

    async def test_a_form_without_the_file_field_is_400(self, client, auth, db):
        response = await client.post(
            "/customers/bulk/csv",
            auth=auth,
            files={"upload": ("c.csv", csv_bytes(valid_rows(1)), "text/csv")},
        )
        assert "file" in [f["field"] for f in _rejected(response)["details"]["fields"]]
        as_text = await client.post(
            "/customers/bulk/csv", auth=auth, data={"file": "a,b"}, files={"other": ("x", b"x")}
        )
        assert _rejected(as_text)["code"] == "INVALID_INPUT"
        assert (await counts(db))["imports"] == 0

    async def test_uploading_needs_the_manage_permission(self, client, auth, db):
        token = (
            await client.post("/tokens", auth=auth, json={"name": "viewer", "permissions": ["VIEW"]})
        ).json()
        viewer = (token["clientId"], token["clientSecret"])
        assert _rejected(await upload(client, viewer, csv_bytes(valid_rows(1))), 403)["code"] == "FORBIDDEN"
        assert (await counts(db))["imports"] == 0


class TestIdempotencyAndIsolation:
    async def test_an_idempotent_upload_creates_one_import(self, client, auth, db, runner):
        data = csv_bytes(valid_rows(5))
        first = await upload(client, auth, data, headers={"Idempotency-Key": "bulk-1"})
        again = await upload(client, auth, data, headers={"Idempotency-Key": "bulk-1"})
        assert first.status_code == again.status_code == 202
        assert first.content == again.content and again.headers["Idempotent-Replayed"] == "true"
        other = await upload(client, auth, csv_bytes(valid_rows(6)), headers={"Idempotency-Key": "bulk-1"})
        assert _rejected(other)["code"] == "INVALID_INPUT"
        assert other.json()["details"]["reason"] == "IDEMPOTENCY_KEY_REUSED"
        assert (await counts(db))["imports"] == 1
        await import_to_the_end(client, auth, runner, first.json()["jobId"])
        assert (await client.get("/customers", auth=auth)).json()["totalCount"] == 5

    async def test_other_tenants_cannot_see_a_job(self, client, auth, db, settings, platform):
        job_id = (await upload(client, auth, csv_bytes(valid_rows(2)))).json()["jobId"]
        other = await create_platform(db, settings, name="Other")
        for credentials in (other["sandbox"], platform["production"]):
            response = await client.get(f"/customers/bulk/jobs/{job_id}", auth=credentials)
            assert _rejected(response, 404)["code"] == "BULK_UPLOAD_JOB_NOT_FOUND"
        unknown = await client.get("/customers/bulk/jobs/Job:00000000-0000-7000-8000-000000000000", auth=auth)
        assert _rejected(unknown, 404)["details"] == {"jobId": "Job:00000000-0000-7000-8000-000000000000"}

    async def test_each_tenant_imports_into_its_own_customers(self, client, auth, db, settings, runner):
        other = (
            await create_platform(db, settings, name="Other", uma_domain=DOMAIN.replace("test-", "other-"))
        )["sandbox"]
        mine = (await upload(client, auth, csv_bytes(valid_rows(3)))).json()["jobId"]
        rows = [{**r, "umaAddress": r["umaAddress"].replace("test-", "other-")} for r in valid_rows(2)]
        theirs = (await upload(client, other, csv_bytes(rows))).json()["jobId"]
        assert (await import_to_the_end(client, auth, runner, mine))["progress"]["successful"] == 3
        assert (await import_to_the_end(client, other, runner, theirs))["progress"]["successful"] == 2
        assert (await client.get("/customers", auth=auth)).json()["totalCount"] == 3
        assert (await client.get("/customers", auth=other)).json()["totalCount"] == 2


class FailingInserts:
    """Makes the next insert of ledger accounts fail while armed: the chunk's transaction then fails
    midway, after its customers and internal accounts were written."""

    def __init__(self, db) -> None:
        from platpay.ledger import repository as ledger_repository

        self.module = ledger_repository
        self.original = ledger_repository.insert_accounts
        self.armed = False
        self.failures = 0

        async def insert_accounts(session, rows):
            if self.armed:
                self.failures += 1
                raise RuntimeError("simulated crash in the middle of a chunk")
            await self.original(session, rows)

        ledger_repository.insert_accounts = insert_accounts

    def remove(self) -> None:
        self.module.insert_accounts = self.original


class TestCrashes:
    async def test_a_chunk_that_fails_midway_commits_nothing_and_is_redone(self, client, auth, db, runner):
        job_id = (await upload(client, auth, csv_bytes(valid_rows(300)))).json()["jobId"]
        assert await run_one_job(runner)
        assert (await job_of(client, auth, job_id))["progress"]["processed"] == 100
        failing = FailingInserts(db)
        try:
            failing.armed = True
            assert await run_one_job(runner)
            assert failing.failures == 1
            state = await job_of(client, auth, job_id)
            assert state["status"] == "PROCESSING" and state["progress"]["processed"] == 100
            assert (await counts(db))["customers"] == 100  # nothing of the failed chunk was kept
            failing.armed = False
        finally:
            failing.remove()
        clock.advance(timedelta(minutes=10))  # past the retry's backoff
        done = await import_to_the_end(client, auth, runner, job_id)
        assert done["progress"] == {"total": 300, "processed": 300, "successful": 300, "failed": 0}
        found = await counts(db)
        assert found["customers"] == found["distinct_platform_ids"] == 300
        assert found["internal_accounts"] == found["ledger_accounts"] == 4 * 300  # USD, USDC, USDB x2

    async def test_a_worker_that_lost_its_lease_commits_nothing(self, client, auth, db, settings):
        job_id = (await upload(client, auth, csv_bytes(valid_rows(300)))).json()["jobId"]
        stalled = JobRunner(db, settings, name="stalled")
        [(job, token)] = await stalled.claim(1)  # then it hangs, holding the lease
        clock.advance(timedelta(seconds=settings.job_lease_seconds + 1))
        survivor = JobRunner(db, settings, name="survivor")
        assert await run_one_job(survivor)  # takes the job over: rows 1-100
        assert (await job_of(client, auth, job_id))["progress"]["processed"] == 100
        await stalled.execute(job, token)  # wakes up and imports rows 101-200, but may not commit them
        assert (await job_of(client, auth, job_id))["progress"]["processed"] == 100
        assert (await counts(db))["customers"] == 100
        done = await import_to_the_end(client, auth, survivor, job_id)
        assert done["progress"]["successful"] == 300
        found = await counts(db)
        assert found["customers"] == found["distinct_platform_ids"] == 300
        assert found["internal_accounts"] == found["ledger_accounts"] == 4 * 300  # USD, USDC, USDB x2

    async def test_an_import_whose_chunk_keeps_failing_ends_failed_with_a_webhook(
        self, client, auth, db, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        job_id = (await upload(client, auth, csv_bytes(valid_rows(150)))).json()["jobId"]
        failing = FailingInserts(db)
        try:
            failing.armed = True
            for _ in range(12):
                await runner.run_until_idle()
                if (await job_of(client, auth, job_id))["status"] == "FAILED":
                    break
                clock.advance(timedelta(minutes=10))
        finally:
            failing.remove()
        failed = await job_of(client, auth, job_id)
        assert failed["status"] == "FAILED" and "completedAt" in failed
        assert "a chunk failed" in failed["failureReason"]
        assert failed["progress"]["processed"] == 0 and failing.failures == 10
        await run_jobs_until(runner, lambda: len(receiver.of_type("BULK_UPLOAD.FAILED")) == 1)
        assert receiver.of_type("BULK_UPLOAD.FAILED")[0].json["data"] == failed

    async def test_a_stored_file_that_cannot_be_read_fails_the_import(
        self, client, auth, db, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        data = csv_bytes(valid_rows(3))
        job_id = (await upload(client, auth, data)).json()["jobId"]
        corrupted = data[:-6] + b"\xff\xfe\xff\xfe\r\n"  # same length, no longer UTF-8
        async with db.transaction() as session:
            await session.execute(
                text("UPDATE customer_import_file_chunks SET data = :data"), {"data": corrupted}
            )
        failed = await import_to_the_end(client, auth, runner, job_id)
        assert failed["status"] == "FAILED" and "not UTF-8" in failed["failureReason"]
        await run_jobs_until(runner, lambda: len(receiver.of_type("BULK_UPLOAD.FAILED")) == 1)
        assert receiver.of_type("BULK_UPLOAD.FAILED")[0].json["data"] == failed
