"""Onboarding's API (SPEC §4.4 kyc-link, §4.5): verifications, beneficial owners, documents."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import Body, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.openapi import form_request
from platpay.kit.pagination import PageParams, page_params
from platpay.kit.routing import api_router
from platpay.onboarding import service as onboarding_service
from platpay.onboarding.schemas import (
    BENEFICIAL_OWNER_CREATE_EXAMPLES,
    BENEFICIAL_OWNER_UPDATE_EXAMPLES,
    DOCUMENT_REPLACE_EXAMPLES,
    DOCUMENT_UPLOAD_EXAMPLES,
    KYC_LINK_EXAMPLES,
    VERIFICATION_DECISION_EXAMPLES,
    VERIFICATION_EXAMPLES,
    BeneficialOwner,
    BeneficialOwnerCreateRequest,
    BeneficialOwnerListResponse,
    BeneficialOwnerUpdateRequest,
    Document,
    DocumentListResponse,
    KycLinkCreateRequest,
    KycLinkResponse,
    Verification,
    VerificationDecisionRequest,
    VerificationListResponse,
    VerificationRequest,
    VerificationStatus,
)
from platpay.onboarding.storage import DOCUMENT_STORE

router = api_router(tags=["KYC/KYB Verifications"])
documents_router = api_router(tags=["Documents"])
_ID: dict[str, Any] = {"max_length": 64}


@router.post(
    "/verifications",
    operation_id="createVerification",
    openapi_extra=VERIFICATION_EXAMPLES,
    response_model=Verification,
    responses={410: {"description": "the customer was deleted"}},
)
async def create_verification(
    request: Request, body: VerificationRequest, principal: Principal = Manager
) -> Verification:
    """Submit a customer for KYC (individual) or KYB (business); RESOLVE_ERRORS names what is missing."""
    async with get_db(request).transaction() as session:
        return await onboarding_service.submit_verification(
            session, tenant_id=principal.tenant.id, customer_id=body.customer_id
        )


@router.get("/verifications", operation_id="listVerifications", response_model=VerificationListResponse)
async def list_verifications(
    request: Request,
    customer_id: str | None = Query(None, alias="customerId", **_ID),
    verification_status: VerificationStatus | None = Query(None, alias="verificationStatus"),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List verifications, newest first; filters combine."""
    async with get_db(request).read() as session:
        page = await onboarding_service.list_verifications(
            session,
            tenant_id=principal.tenant.id,
            params=params,
            customer_id=customer_id,
            status=verification_status,
        )
    return page.envelope([onboarding_service.verification_schema(row).to_api() for row in page.items])


@router.get("/verifications/{verificationId}", operation_id="getVerification", response_model=Verification)
async def get_verification(
    verificationId: str, request: Request, principal: Principal = Viewer
) -> Verification:
    """Get a verification."""
    async with get_db(request).read() as session:
        return await onboarding_service.get_verification(
            session, tenant_id=principal.tenant.id, verification_id=verificationId
        )


@router.post(
    "/verifications/{verificationId}/decision",
    operation_id="decideVerification",
    openapi_extra={**VERIFICATION_DECISION_EXAMPLES, "x-platpay-extension": True},
    response_model=Verification,
    responses={409: {"description": "the verification is not waiting for a manual review"}},
)
async def decide_verification(
    verificationId: str,
    request: Request,
    body: VerificationDecisionRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Manager,
) -> Response:
    """Decide a verification waiting for a person (PENDING_MANUAL_REVIEW): APPROVED or REJECTED.

    A platpay operation, not in the reference API. The decision is recorded as the KYC provider's would be:
    the verification and the customer's kycStatus move alike and the same webhooks go out
    (VERIFICATION.APPROVED / REJECTED, CUSTOMER.KYC_* or KYB_*); a rejection's reason becomes its
    APPLICANT_REJECTED error. The verification keeps who decided (decidedBy: the token's id) and why
    (decisionReason). A verification not waiting for a person (decided already, by anyone) answers 409
    VERIFICATION_NOT_AWAITING_REVIEW naming its status, and nothing changes. Sandbox and production alike.
    """
    return await idem.run(
        body,
        lambda s: onboarding_service.decide_review(
            s,
            tenant_id=principal.tenant.id,
            verification_id=verificationId,
            decision=body.decision,
            reason=body.reason,
            actor=principal.id,
        ),
        status=200,
    )


@router.post(
    "/customers/{customerId}/kyc-link",
    operation_id="createCustomerKycLink",
    openapi_extra=KYC_LINK_EXAMPLES,
    status_code=201,
    response_model=KycLinkResponse,
    responses={
        409: {"description": "a contactVerification channel is not VERIFIED yet"},
        410: {"description": "the customer was deleted"},
    },
)
async def create_kyc_link(
    customerId: str,
    request: Request,
    body: KycLinkCreateRequest | None = Body(None),
    idem: Idempotent = Idempotency,
    principal: Principal = Manager,
) -> Response:
    """Generate a single-use hosted verification link for a customer (its kycStatus does not change)."""
    settings = request.app.state.settings
    public_url = settings.public_base_url or str(request.base_url)
    redirect_uri = body.redirect_uri if body is not None else None
    return await idem.run(
        body,
        lambda s: onboarding_service.create_link(
            s,
            tenant_id=principal.tenant.id,
            is_sandbox=principal.tenant.is_sandbox,
            customer_id=customerId,
            redirect_uri=redirect_uri,
            public_url=public_url,
            ttl_seconds=settings.kyc_link_ttl_seconds,
        ),
    )


# ---- beneficial owners


@router.post(
    "/beneficial-owners",
    operation_id="createBeneficialOwner",
    openapi_extra=BENEFICIAL_OWNER_CREATE_EXAMPLES,
    status_code=201,
    response_model=BeneficialOwner,
    responses={410: {"description": "the customer was deleted"}},
)
async def create_beneficial_owner(
    request: Request, body: BeneficialOwnerCreateRequest, principal: Principal = Manager
) -> BeneficialOwner:
    """Add a beneficial owner, director or officer to a business customer; their KYC runs automatically."""
    async with get_db(request).transaction() as session:
        return await onboarding_service.create_owner(
            session,
            tenant_id=principal.tenant.id,
            customer_id=body.customer_id,
            roles=list(body.roles),
            ownership_percentage=body.ownership_percentage,
            personal_info=body.personal_info.model_dump(mode="json", by_alias=True, exclude_none=True),
        )


@router.get(
    "/beneficial-owners", operation_id="listBeneficialOwners", response_model=BeneficialOwnerListResponse
)
async def list_beneficial_owners(
    request: Request,
    customer_id: str = Query(..., alias="customerId", **_ID),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List a business customer's beneficial owners."""
    async with get_db(request).read() as session:
        page = await onboarding_service.list_owners(
            session, tenant_id=principal.tenant.id, customer_id=customer_id, params=params
        )
    return page.envelope([onboarding_service.owner_schema(row).to_api() for row in page.items])


@router.get(
    "/beneficial-owners/{beneficialOwnerId}",
    operation_id="getBeneficialOwner",
    response_model=BeneficialOwner,
)
async def get_beneficial_owner(
    beneficialOwnerId: str, request: Request, principal: Principal = Viewer
) -> BeneficialOwner:
    """Get a beneficial owner."""
    async with get_db(request).read() as session:
        return await onboarding_service.get_owner(
            session, tenant_id=principal.tenant.id, owner_id=beneficialOwnerId
        )


@router.patch(
    "/beneficial-owners/{beneficialOwnerId}",
    operation_id="updateBeneficialOwner",
    openapi_extra=BENEFICIAL_OWNER_UPDATE_EXAMPLES,
    response_model=BeneficialOwner,
    responses={410: {"description": "the customer was deleted"}},
)
async def update_beneficial_owner(
    beneficialOwnerId: str,
    request: Request,
    body: BeneficialOwnerUpdateRequest,
    principal: Principal = Manager,
) -> BeneficialOwner:
    """Update a beneficial owner (the fields given); changed personal information is reviewed again."""
    info = (
        body.personal_info.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if body.personal_info
        else None
    )
    async with get_db(request).transaction() as session:
        return await onboarding_service.update_owner(
            session,
            tenant_id=principal.tenant.id,
            owner_id=beneficialOwnerId,
            roles=list(body.roles) if body.roles is not None else None,
            ownership_percentage=body.ownership_percentage,
            personal_info=info,
        )


# ---- documents


async def _parse_form(
    request: Request, principal: Principal, allowed: frozenset[str]
) -> onboarding_service.ParsedForm:
    return await onboarding_service.parse_form(
        request.stream(),
        content_type=request.headers.get("content-type"),
        store=DOCUMENT_STORE.get(),
        tenant_id=principal.tenant.id,
        max_file_bytes=request.app.state.settings.document_max_bytes,
        allowed_fields=allowed,
    )


@documents_router.post(
    "/documents",
    operation_id="uploadDocument",
    openapi_extra=form_request(DOCUMENT_UPLOAD_EXAMPLES[0], **DOCUMENT_UPLOAD_EXAMPLES[1]),
    status_code=201,
    response_model=Document,
    responses={
        413: {"description": "the file is over 10 MiB"},
        415: {"description": "not multipart/form-data"},
    },
)
async def upload_document(request: Request, principal: Principal = Manager) -> Document:
    """Upload a verification document (multipart: `file` plus metadata) for a customer or beneficial owner."""
    form = await _parse_form(request, principal, onboarding_service.DOCUMENT_UPLOAD_FIELDS)
    try:
        onboarding_service.check_document_upload(form)
        assert form.file is not None
        async with get_db(request).transaction() as session:
            return await onboarding_service.create_document(
                session,
                tenant_id=principal.tenant.id,
                holder_id=form.fields["documentHolder"],
                fields=form.fields,
                stored=form.file,
            )
    except BaseException:
        await onboarding_service.discard_document_files(form.keys())
        raise


@documents_router.get("/documents", operation_id="listDocuments", response_model=DocumentListResponse)
async def list_documents(
    request: Request,
    document_holder: str | None = Query(None, alias="documentHolder", **_ID),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List documents, newest first, optionally of one holder."""
    async with get_db(request).read() as session:
        page = await onboarding_service.list_documents(
            session, tenant_id=principal.tenant.id, holder_id=document_holder, params=params
        )
    return page.envelope([onboarding_service.document_schema(row).to_api() for row in page.items])


@documents_router.get("/documents/{documentId}", operation_id="getDocument", response_model=Document)
async def get_document(documentId: str, request: Request, principal: Principal = Viewer) -> Document:
    """Get a document's metadata."""
    async with get_db(request).read() as session:
        return await onboarding_service.get_document(
            session, tenant_id=principal.tenant.id, document_id=documentId
        )


@documents_router.get(
    "/documents/{documentId}/content",
    operation_id="downloadDocument",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "the file as uploaded",
            "content": {
                m: {"schema": {"type": "string", "format": "binary"}}
                for m in ("application/pdf", "image/jpeg", "image/png")
            },
        }
    },
)
async def download_document(documentId: str, request: Request, principal: Principal = Viewer) -> Response:
    """Download a document's file as it was uploaded."""
    async with get_db(request).read() as session:
        row, key = await onboarding_service.document_content(
            session, tenant_id=principal.tenant.id, document_id=documentId
        )
    return StreamingResponse(
        onboarding_service.read_document_file(key),
        media_type=row.content_type,
        headers={
            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(row.file_name, safe='')}",
            "Content-Length": str(row.size),
            "X-Content-SHA256": row.sha256,
        },
    )


@documents_router.put(
    "/documents/{documentId}",
    operation_id="replaceDocument",
    openapi_extra=form_request(DOCUMENT_REPLACE_EXAMPLES[0], **DOCUMENT_REPLACE_EXAMPLES[1]),
    response_model=Document,
    responses={
        409: {"description": "submitted with a verification under review"},
        413: {"description": "the file is over 10 MiB"},
        415: {"description": "not multipart/form-data"},
    },
)
async def replace_document(documentId: str, request: Request, principal: Principal = Manager) -> Document:
    """Replace a document's file and/or metadata (multipart), e.g. after a rejection."""
    async with get_db(request).read() as session:  # 404 / 409 before reading the upload
        await onboarding_service.ensure_document_changeable(
            session, tenant_id=principal.tenant.id, document_id=documentId
        )
    form = await _parse_form(request, principal, onboarding_service.DOCUMENT_METADATA_FIELDS)
    try:
        onboarding_service.check_document_replacement(form)
        async with get_db(request).transaction() as session:
            replaced, old_key = await onboarding_service.replace_document(
                session,
                tenant_id=principal.tenant.id,
                document_id=documentId,
                fields=form.fields,
                stored=form.file,
            )
    except BaseException:
        await onboarding_service.discard_document_files(form.keys())
        raise
    if old_key is not None:
        await onboarding_service.discard_document_files([old_key])
    return replaced


@documents_router.delete(
    "/documents/{documentId}",
    operation_id="deleteDocument",
    status_code=204,
    response_class=Response,
    responses={409: {"description": "submitted with a verification under review"}},
)
async def delete_document(documentId: str, request: Request, principal: Principal = Manager) -> Response:
    """Delete a document and its file (irreversible)."""
    async with get_db(request).transaction() as session:
        key = await onboarding_service.delete_document(
            session, tenant_id=principal.tenant.id, document_id=documentId
        )
    await onboarding_service.discard_document_files([key])
    return Response(status_code=204)
