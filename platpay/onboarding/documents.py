"""Documents (SPEC §4.5 and §8, INTERFACE-FACTS §3.10): metadata rows here, files in the document store
(storage.py), uploaded as they stream (uploads.py). A document's holder is a customer or a beneficial
owner of the same tenant. One submitted with a verification that is still under review can be neither
replaced nor deleted (409). The file's content decides its type (PDF, JPEG, PNG), never its name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers import service as customers_service
from platpay.errors import InvalidInput
from platpay.kit import clock, countries
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.onboarding import repository, verifications
from platpay.onboarding.errors import DocumentHolderNotFound, DocumentNotFound, DocumentUnderReview
from platpay.onboarding.models import DocumentRow
from platpay.onboarding.schemas import DOCUMENT_TYPES, Document
from platpay.onboarding.storage import DOCUMENT_STORE
from platpay.onboarding.uploads import ParsedForm, StoredFile

METADATA_FIELDS = frozenset({"documentType", "country", "side", "documentNumber", "issuingAuthority"})
UPLOAD_FIELDS = METADATA_FIELDS | {"documentHolder"}
_LIMITS = {"documentNumber": 100, "issuingAuthority": 200, "documentHolder": 64}


def to_schema(row: DocumentRow) -> Document:
    return Document(
        id=row.id,
        document_holder=row.holder_id,
        document_type=row.document_type,
        side=row.side,
        country=row.country,
        document_number=row.document_number,
        issuing_authority=row.issuing_authority,
        file_name=row.file_name,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def metadata_problems(fields: dict[str, str], *, required: tuple[str, ...]) -> list[dict[str, str]]:
    """The form's metadata checked (API field names); `required` must be present."""
    problems = [{"field": name, "message": "is required"} for name in required if not fields.get(name)]
    kind = fields.get("documentType")
    if kind and kind not in DOCUMENT_TYPES:
        problems.append(
            {
                "field": "documentType",
                "message": f"{kind!r} is not a document type ({', '.join(DOCUMENT_TYPES)})",
            }
        )
    country = fields.get("country")
    if country and not countries.is_country(country):
        problems.append(
            {"field": "country", "message": f"{country!r} is not an ISO 3166-1 alpha-2 country code"}
        )
    side = fields.get("side")
    if side and side not in ("FRONT", "BACK"):
        problems.append({"field": "side", "message": "must be FRONT or BACK"})
    for name, limit in _LIMITS.items():
        value = fields.get(name)
        if value is not None and (len(value) > limit or not value.isprintable() or value != value.strip()):
            problems.append(
                {"field": name, "message": f"must be printable text of at most {limit} characters"}
            )
    return problems


def _refuse(problems: list[dict[str, str]]) -> InvalidInput:
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return InvalidInput(f"invalid input: {summary}", details={"fields": problems})


async def holder_customer(session: AsyncSession, *, tenant_id: str, holder_id: str) -> str:
    """The customer a holder belongs to (itself, or a beneficial owner's business); 404 when the tenant
    has no such holder."""
    if holder_id.startswith("Customer:"):
        customer = await customers_service.find_active(session, tenant_id=tenant_id, customer_id=holder_id)
        if customer is not None:
            return customer.id
    elif holder_id.startswith("BeneficialOwner:"):
        owner = await repository.get_owner(session, tenant_id=tenant_id, owner_id=holder_id)
        if owner is not None:
            return owner.customer_id
    raise DocumentHolderNotFound(holder_id)


def check_upload(form: ParsedForm) -> None:
    """POST /documents' form, before anything is written to the database."""
    problems = metadata_problems(form.fields, required=("documentHolder", "documentType", "country"))
    if form.file is None:
        problems.insert(0, {"field": "file", "message": "is required (a PDF, JPEG or PNG file)"})
    if problems:
        raise _refuse(problems)


async def create(
    session: AsyncSession, *, tenant_id: str, holder_id: str, fields: dict[str, str], stored: StoredFile
) -> Document:
    """A document for `holder_id` whose file is already in the store (`stored`)."""
    customer_id = await holder_customer(session, tenant_id=tenant_id, holder_id=holder_id)
    now = clock.now()
    row = DocumentRow(
        id=new_id("Document"),
        tenant_id=tenant_id,
        holder_id=holder_id,
        customer_id=customer_id,
        document_type=fields["documentType"],
        side=fields.get("side") or None,
        country=fields["country"],
        document_number=fields.get("documentNumber") or None,
        issuing_authority=fields.get("issuingAuthority") or None,
        file_name=stored.file_name,
        content_type=stored.content_type,
        size=stored.size,
        sha256=stored.sha256,
        storage_key=stored.key,
        verification_id=None,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return to_schema(row)


async def load(
    session: AsyncSession, *, tenant_id: str, document_id: str, for_update: bool = False
) -> DocumentRow:
    row = await repository.get_document(
        session, tenant_id=tenant_id, document_id=document_id, for_update=for_update
    )
    if row is None:
        raise DocumentNotFound(document_id)
    return row


async def get(session: AsyncSession, *, tenant_id: str, document_id: str) -> Document:
    return to_schema(await load(session, tenant_id=tenant_id, document_id=document_id))


async def list_page(
    session: AsyncSession, *, tenant_id: str, holder_id: str | None, params: PageParams
) -> PageResult[DocumentRow]:
    stmt = repository.documents_query(tenant_id=tenant_id, holder_id=holder_id)
    return await paginate(session, stmt, id_column=DocumentRow.id, params=params)


async def list_of_customer(
    session: AsyncSession, *, tenant_id: str, customer_id: str, params: PageParams
) -> PageResult[DocumentRow]:
    """A page of the documents of a customer and of its beneficial owners (the console's customer page)."""
    stmt = repository.customer_documents_query(tenant_id=tenant_id, customer_id=customer_id)
    return await paginate(session, stmt, id_column=DocumentRow.id, params=params)


async def ensure_changeable(
    session: AsyncSession, *, tenant_id: str, document_id: str, for_update: bool = False
) -> DocumentRow:
    """The document, unless it was submitted with a verification still under review (409)."""
    row = await load(session, tenant_id=tenant_id, document_id=document_id, for_update=for_update)
    if await verifications.is_under_review(session, tenant_id=tenant_id, verification_id=row.verification_id):
        raise DocumentUnderReview(
            f"document {document_id} was submitted with verification {row.verification_id}, which is under "
            "review: it cannot change until the review ends",
            details={"documentId": document_id, "verificationId": row.verification_id},
        )
    return row


def check_replacement(form: ParsedForm) -> None:
    problems = metadata_problems(form.fields, required=())
    if form.file is None and not form.fields:
        problems.append({"field": "file", "message": "give a new file and/or metadata fields to change"})
    if problems:
        raise _refuse(problems)


async def replace(
    session: AsyncSession,
    *,
    tenant_id: str,
    document_id: str,
    fields: dict[str, str],
    stored: StoredFile | None,
) -> tuple[Document, str | None]:
    """PUT /documents/{id}: the fields given and the new file replace the old; the replaced file's key
    (for the caller to delete from the store once this commits), None if the file stays."""
    row = await ensure_changeable(session, tenant_id=tenant_id, document_id=document_id, for_update=True)
    attributes = {
        "documentType": "document_type",
        "country": "country",
        "side": "side",
        "documentNumber": "document_number",
        "issuingAuthority": "issuing_authority",
    }
    for name, attribute in attributes.items():
        if name in fields:
            setattr(row, attribute, fields[name] or None)
    old_key = None
    if stored is not None:
        old_key = row.storage_key
        row.file_name, row.content_type, row.size = stored.file_name, stored.content_type, stored.size
        row.sha256, row.storage_key = stored.sha256, stored.key
    row.verification_id = None  # a changed document is submitted anew with the next verification
    row.updated_at = clock.now()
    await session.flush()
    return to_schema(row), old_key


async def delete(session: AsyncSession, *, tenant_id: str, document_id: str) -> str:
    """DELETE /documents/{id}: the row goes; its file's key is returned for the caller to delete from the
    store once this commits."""
    row = await ensure_changeable(session, tenant_id=tenant_id, document_id=document_id, for_update=True)
    await session.delete(row)
    await session.flush()
    return row.storage_key


async def content(session: AsyncSession, *, tenant_id: str, document_id: str) -> tuple[DocumentRow, Any]:
    row = await load(session, tenant_id=tenant_id, document_id=document_id)
    return row, row.storage_key


def read_file(key: str) -> AsyncIterator[bytes]:
    return DOCUMENT_STORE.get().read(key)


async def discard_files(keys: list[str]) -> None:
    store = DOCUMENT_STORE.get()
    for key in keys:
        await store.delete(key)
