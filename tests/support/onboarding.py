"""What the onboarding tests share: customers with what a verification needs, owners, files of each type."""

from __future__ import annotations

import struct
import zlib
from typing import Any

from tests.factories import FULL_PERSON

PDF = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"
EXECUTABLE = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56  # an ELF binary's header


def png(width: int = 2, height: int = 2) -> bytes:
    """A real (tiny, grey) PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


PERSON = {**FULL_PERSON, "address": {**FULL_PERSON["address"], "city": "Springfield"}}
BUSINESS = {
    "customerType": "BUSINESS",
    "email": "ops@acme.example",
    "address": {"line1": "500 Market St", "city": "San Francisco", "postalCode": "94105", "country": "US"},
    "businessInfo": {
        "legalName": "Acme Corp",
        "taxId": "12-3456789",
        "incorporatedOn": "2015-06-01",
        "registrationNumber": "REG-5523000",
    },
}
OWNER_INFO = {
    "firstName": "Ada",
    "lastName": "Lovelace",
    "birthDate": "1980-02-03",
    "nationality": "GB",
    "email": "ada@example.com",
    "phoneNumber": "+447700900123",
    "address": {"line1": "2 Oak St", "city": "London", "postalCode": "N1 9GU", "country": "GB"},
    "idType": "NON_US_TAX_ID",
    "identifier": "QQ123456C",
    "countryOfIssuance": "GB",
}


async def create(client, auth, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/customers", auth=auth, json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def upload(
    client,
    auth,
    holder: str,
    document_type: str = "PASSPORT",
    content: bytes = PDF,
    name: str = "scan.pdf",
    **fields: str,
):
    return await client.post(
        "/documents",
        auth=auth,
        data={"documentHolder": holder, "documentType": document_type, "country": "US", **fields},
        files={"file": (name, content, "application/octet-stream")},
    )


async def uploaded(
    client, auth, holder: str, document_type: str = "PASSPORT", content: bytes = PDF
) -> dict[str, Any]:
    response = await upload(client, auth, holder, document_type, content)
    assert response.status_code == 201, response.text
    return response.json()


async def owner(
    client, auth, customer_id: str, *, last_name: str = "Lovelace", share: int = 60, **info: Any
) -> dict[str, Any]:
    response = await client.post(
        "/beneficial-owners",
        auth=auth,
        json={
            "customerId": customer_id,
            "roles": ["UBO", "DIRECTOR"],
            "ownershipPercentage": share,
            "personalInfo": {**OWNER_INFO, "lastName": last_name, **info},
        },
    )
    assert response.status_code == 201, response.text
    return response.json()


async def complete_business(
    client, auth, *, registration: str = "REG-5523000", owner_last_name: str = "Lovelace"
) -> tuple[dict, dict]:
    """A business with everything a verification needs: its documents and one owner with an ID."""
    business = await create(
        client,
        auth,
        {**BUSINESS, "businessInfo": {**BUSINESS["businessInfo"], "registrationNumber": registration}},
    )
    for kind in ("CERTIFICATE_OF_INCORPORATION", "SHAREHOLDER_REGISTER", "UTILITY_BILL"):
        await uploaded(client, auth, business["id"], kind)
    person = await owner(client, auth, business["id"], last_name=owner_last_name)
    await uploaded(client, auth, person["id"], "PASSPORT", png())
    return business, person


async def verify(client, auth, customer_id: str) -> dict[str, Any]:
    response = await client.post("/verifications", auth=auth, json={"customerId": customer_id})
    assert response.status_code == 200, response.text
    return response.json()
