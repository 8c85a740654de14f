"""Bulk customer import helpers: CSV rows of valid individuals and businesses, the file they make, its
upload (POST /customers/bulk/csv), and following the import job to its end."""

from __future__ import annotations

import csv
import io
from typing import Any

DOMAIN = "test-platform.platpay.test"
HEADER = [
    "umaAddress",
    "platformCustomerId",
    "customerType",
    "fullName",
    "birthDate",
    "email",
    "addressLine1",
    "addressLine2",
    "city",
    "state",
    "postalCode",
    "country",
    "businessLegalName",
    "businessTaxId",
    "businessRegistrationNumber",
    "platformAccountId",
    "description",
]


def person(n: int, **cells: str) -> dict[str, str]:
    return {
        "umaAddress": f"$user{n}@{DOMAIN}",
        "platformCustomerId": f"cust-{n}",
        "customerType": "INDIVIDUAL",
        "fullName": "Jane O'Doe-Smith",
        "birthDate": f"19{50 + n % 50}-0{1 + n % 9}-1{n % 10}",
        "email": f"user{n}@example.com",
        "addressLine1": f"{n} Main St",
        "city": "Springfield",
        "state": "IL",
        "postalCode": "62701",
        "country": "US",
        "platformAccountId": f"acct-{n}",
        "description": "imported",
        **cells,
    }


def company(n: int, **cells: str) -> dict[str, str]:
    return {
        "umaAddress": f"$biz{n}@{DOMAIN}",
        "platformCustomerId": f"cust-{n}",
        "customerType": "BUSINESS",
        "businessLegalName": f"Acme {n} Inc.",
        "businessTaxId": "12-3456789",
        "businessRegistrationNumber": f"R-{n}",
        "addressLine1": "500 Market St",
        "addressLine2": "Suite 1",
        "city": "San Francisco",
        "state": "CA",
        "postalCode": "94105",
        "country": "US",
        **cells,
    }


def valid_rows(count: int) -> list[dict[str, str]]:
    """Row n (1-based, as the API numbers rows) is a business every tenth row, else an individual."""
    return [company(n) if n % 10 == 0 else person(n) for n in range(1, count + 1)]


def csv_bytes(rows: list[dict[str, str]], header: list[str] = HEADER, newline: str = "\r\n") -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator=newline)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


async def upload(client, auth, data: bytes, *, content_type: str = "text/csv", headers: dict | None = None):
    files = {"file": ("customers.csv", data, content_type)}
    return await client.post("/customers/bulk/csv", auth=auth, files=files, headers=headers or {})


async def job_of(client, auth, job_id: str) -> dict[str, Any]:
    response = await client.get(f"/customers/bulk/jobs/{job_id}", auth=auth)
    assert response.status_code == 200, response.text
    return response.json()


async def import_to_the_end(client, auth, runner, job_id: str) -> dict[str, Any]:
    state: dict[str, Any] = {}

    async def finished() -> bool:
        state.update(await job_of(client, auth, job_id))
        return state["status"] in ("COMPLETED", "FAILED")

    for _ in range(1000):
        if await finished():
            return state
        await runner.run_until_idle(timeout=60)
    raise AssertionError(f"import not finished: {state}")
