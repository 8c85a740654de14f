"""The console's customers: a searchable, filterable list; a customer's page (KYC/KYB and its verifications,
contact verification, documents viewed in place or downloaded, beneficial owners, accounts with balances,
cards, latest transactions, agents, the console actions on it); and a person's decision of a manual review.

Every read is one of the services' own (the same the API's endpoints call), a fixed number per page whatever
the number of rows; the decision calls onboarding_service.decide_review, as POST
/verifications/{id}/decision does."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from platpay.accounts import service as accounts_service
from platpay.accounts.external import service as external_accounts_service
from platpay.agents import service as agents_service
from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.cards import service as cards_service
from platpay.console import web
from platpay.customers import service as customers_service
from platpay.customers.state import KycStatus
from platpay.errors import InvalidInput
from platpay.events import service as events_service
from platpay.kit.pagination import PageParams
from platpay.onboarding import service as onboarding_service
from platpay.onboarding.errors import DocumentNotFound
from platpay.onboarding.state import VerificationStatus
from platpay.payments import service as payments_service

router = web.console_router()

CUSTOMER_TYPES = ("INDIVIDUAL", "BUSINESS")
KYC_STATUSES = tuple(status.value for status in KycStatus)
DECISIONS = {"approve": VerificationStatus.APPROVED, "reject": VerificationStatus.REJECTED}
HISTORY_LIMIT = 20  # the customer's latest webhook events shown
SECTION_LIMIT = 10  # rows of each section of a customer's page (each links to its full list where one exists)
# What the file route may send inline (the document store only keeps these: onboarding/uploads.py).
INLINE_TYPES = frozenset({"application/pdf", "image/jpeg", "image/png"})
FILE_CSP = "default-src 'none'; img-src 'self'; object-src 'self'; frame-ancestors 'self'; base-uri 'none'"


def _first(limit: int) -> PageParams:
    return PageParams(limit=limit, after_id=None)


def _name_of(customer: Any) -> str:
    if getattr(customer, "customer_type", None) == "BUSINESS":
        info = getattr(customer, "business_info", None)
        return (info.legal_name if info is not None else None) or customer.platform_customer_id
    return getattr(customer, "full_name", None) or customer.email or customer.platform_customer_id


@router.get("/customers")
async def list_customers(request: Request, console: web.Console = web.SignedIn) -> Response:
    query = web.query_text(request, "q", max_length=320) or ""
    kyc_status = web.query_choice(request, "kycStatus", KYC_STATUSES)
    customer_type = web.query_choice(request, "customerType", CUSTOMER_TYPES)
    params = web.page_params(request)
    async with console.db.read() as session:
        page = await customers_service.search_customers(
            session,
            tenant_id=console.tenant_id,
            query=query,
            params=params,
            kyc_status=kyc_status,
            customer_type=customer_type,
        )
    rows = [customers_service.to_schema(row) for row in page.items]
    return web.render(
        console,
        "customers/list.html",
        request=request,
        title="Customers",
        customers=[(customer, _name_of(customer)) for customer in rows],
        q=query,
        kyc_status=kyc_status,
        customer_type=customer_type,
        kyc_statuses=KYC_STATUSES,
        customer_types=CUSTOMER_TYPES,
        next_url=web.next_page_url(request, page),
        filtered=bool(query or kyc_status or customer_type),
    )


async def _customer_page(
    request: Request,
    console: web.Console,
    customer_id: str,
    *,
    errors: dict[str, str] | None = None,
    status: int = 200,
    notice: str | None = None,
) -> Response:
    tenant = console.principal.tenant
    settings = console.settings
    async with console.db.read() as session:
        row = await customers_service.load(session, tenant_id=tenant.id, customer_id=customer_id)
        customer = await customers_service.render(session, row)
        verifications_page = await onboarding_service.list_verifications(
            session, tenant_id=tenant.id, params=_first(SECTION_LIMIT), customer_id=row.id, status=None
        )
        documents_page = await onboarding_service.list_customer_documents(
            session, tenant_id=tenant.id, customer_id=row.id, params=_first(20)
        )
        accounts_page, internal_accounts = await accounts_service.list_customer_accounts(
            session, tenant_id=tenant.id, params=_first(SECTION_LIMIT), customer_id=row.id
        )
        external_page = await external_accounts_service.list_external_accounts(
            session, tenant_id=tenant.id, platform=False, params=_first(SECTION_LIMIT), customer_id=row.id
        )
        cards_page, cards = await cards_service.list_cards(
            session, tenant=tenant, params=_first(SECTION_LIMIT), settings=settings, cardholder_id=row.id
        )
        transactions_page, transactions = await payments_service.list_transactions(
            session, tenant=tenant, params=_first(SECTION_LIMIT), customer_id=row.id
        )
        agents_page, agents = await agents_service.list_agents(
            session, tenant=tenant, params=_first(SECTION_LIMIT), customer_id=row.id
        )
        verifications = [onboarding_service.verification_schema(v) for v in verifications_page.items]
        timeline = await events_service.timeline_for_resource(
            session, tenant_id=tenant.id, resource_id=row.id, latest=HISTORY_LIMIT + 1
        )
        trail = await sessions_service.actions_for_subjects(
            session, tenant_id=tenant.id, subject_ids=[row.id, *(v.id for v in verifications)]
        )
    verification_status = {v.id: v.verification_status for v in verifications}
    documents = [
        (onboarding_service.document_schema(d), verification_status.get(d.verification_id or ""), d)
        for d in documents_page.items
    ]
    holders = {row.id: "the customer"}
    for owner in getattr(customer, "beneficial_owners", None) or []:
        holders[owner.id] = f"{owner.personal_info.first_name} {owner.personal_info.last_name}".strip()
    return web.render(
        console,
        "customers/detail.html",
        request=request,
        status=status,
        title=_name_of(customer),
        customer=customer,
        name=_name_of(customer),
        deleted=row.deleted_at is not None,
        kyc_label="KYB" if row.customer_type == "BUSINESS" else "KYC",
        verifications=verifications,
        more_verifications=verifications_page.has_more,
        awaiting=VerificationStatus.PENDING_MANUAL_REVIEW.value,
        documents=documents,
        more_documents=documents_page.has_more,
        holders=holders,
        owners=getattr(customer, "beneficial_owners", None) or [],
        internal_accounts=internal_accounts,
        more_internal_accounts=accounts_page.has_more,
        external_accounts=[external_accounts_service.to_schema(a) for a in external_page.items],
        more_external_accounts=external_page.has_more,
        cards=cards,
        more_cards=cards_page.has_more,
        transactions=transactions,
        transactions_url="/console/transactions?" + urlencode({"customerId": row.id}),
        more_transactions=transactions_page.has_more,
        agents=agents,
        more_agents=agents_page.has_more,
        trail=trail,
        history=list(reversed(timeline))[:HISTORY_LIMIT],
        more_history=len(timeline) > HISTORY_LIMIT,
        errors=errors or {},
        notice=notice,
    )


@router.get("/customers/{customerId}")
async def customer_page(customerId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    notice = {"decided": "Decision recorded."}.get(request.query_params.get("notice") or "")
    return await _customer_page(request, console, customerId, notice=notice)


@router.get("/customers/{customerId}/documents/{documentId}/file")
async def document_file(
    customerId: str, documentId: str, request: Request, console: web.Console = web.SignedIn
) -> Response:
    """The document's file as uploaded: shown in the browser (`inline`), or saved with `?download=1`
    (`attachment`), as GET /documents/{id}/content sends it. A document of another customer is not found."""
    async with console.db.read() as session:
        customer = await customers_service.load(session, tenant_id=console.tenant_id, customer_id=customerId)
        document, key = await onboarding_service.document_content(
            session, tenant_id=console.tenant_id, document_id=documentId
        )
    if document.customer_id != customer.id:
        raise DocumentNotFound(documentId)
    inline = request.query_params.get("download") != "1" and document.content_type in INLINE_TYPES
    disposition = "inline" if inline else "attachment"
    return StreamingResponse(
        onboarding_service.read_document_file(key),
        media_type=document.content_type,
        headers={
            **web.SECURITY_HEADERS,
            # the file is shown as a page of its own: an image or the browser's PDF viewer, no script
            "Content-Security-Policy": FILE_CSP,
            "X-Frame-Options": "SAMEORIGIN",
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(document.file_name, safe='')}",
            "Content-Length": str(document.size),
            "X-Content-SHA256": document.sha256,
        },
    )


@router.post("/verifications/{verificationId}/decision")
async def decide_review(
    verificationId: str, request: Request, console: web.Console = web.SignedIn
) -> Response:
    """A person's decision of a verification waiting in PENDING_MANUAL_REVIEW: the same service call as POST
    /verifications/{id}/decision, with the console trail's REVIEW_DECIDED in its transaction. A rejection
    without its reason shows the customer's page again with the error beside the field (400, nothing
    changed); a verification decided already (another tab, the API) is the service's 409 page."""
    form = await web.form_of(console, permission=Permission.MANAGE)
    async with console.db.read() as session:
        verification = await onboarding_service.get_verification(
            session, tenant_id=console.tenant_id, verification_id=verificationId
        )
    decision = DECISIONS.get(str(form.get("decision") or ""))
    if decision is None:
        raise InvalidInput(
            "decision must be approve or reject",
            details={"fields": [{"field": "decision", "reason": "approve or reject"}]},
        )
    reason = web.text_field(form, "reason", required=False)
    if decision == VerificationStatus.REJECTED and reason is None:
        return await _customer_page(
            request,
            console,
            verification.customer_id,
            errors={"reason": "Give the reason for rejecting: the customer's verification error shows it."},
            status=400,
        )
    async with console.db.transaction() as session:
        decided = await onboarding_service.decide_review(
            session,
            tenant_id=console.tenant_id,
            verification_id=verification.id,
            decision=decision,
            reason=reason,
            actor=console.principal.id,
        )
        await console.record(
            session,
            action="REVIEW_DECIDED",
            subject_type="verification",
            subject_id=decided.id,
            customerId=decided.customer_id,
            decision=decision,
            reason=reason,
        )
    return web.redirect(f"/console/customers/{quote(decided.customer_id, safe=':')}?notice=decided")
