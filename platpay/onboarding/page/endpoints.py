"""The hosted verification page (SPEC §1, §4.4): what a KYC link opens, served by platpay outside the API's
base path at /kyc/{token}. Server-rendered (Jinja2 templates in onboarding/page/templates, inline CSS, no
scripts or external assets: it works offline, on a phone-width screen).

It asks for exactly what a verification of the customer still lacks (verifications.missing): the missing
fields, the missing documents (a file and its type each) and, for a business without one, a beneficial
owner with their identity document. A submission goes through the API's own code: the customer's fields
through customers' update (the same rules), the owner through owners.create, the files through the
streaming upload (uploads.py: the same type and size checks) and documents.create, and then
verifications.submit, the code of POST /verifications. Anything refused shows beside its field and
changes nothing; once the verification is submitted (IN_PROGRESS) the link is used up and the browser is
sent to the link's redirectUri. A used or expired link answers 410, an unknown one 404, each with a page
saying so; nothing unexpected shows more than a short apology.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import structlog
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import ValidationError

from platpay.auth.principals import get_db
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.errors import ApiError, InvalidInput
from platpay.kit import clock, countries
from platpay.onboarding import requirements
from platpay.onboarding import service as onboarding_service
from platpay.onboarding.schemas import DOCUMENT_TYPES, BeneficialOwnerPersonalInfo
from platpay.onboarding.state import VerificationStatus
from platpay.onboarding.storage import DOCUMENT_STORE
from platpay.tenants import service as tenants_service

log = structlog.get_logger("platpay.onboarding.page")
PAGE_PATH = onboarding_service.PAGE_PATH
MAX_FILES = 8
ENVELOPE_ALLOWANCE_BYTES = 1 << 20
NEW_OWNER = "owner"

router = APIRouter(include_in_schema=False)
_templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
_HTML_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the link's token is in the URL
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action *",
}
_DATE_FIELDS = {"customer.birthDate", "customer.businessInfo.incorporatedOn", "owner.birthDate"}
_COUNTRY_FIELDS = {
    "customer.address.country",
    "customer.nationality",
    "owner.nationality",
    "owner.address.country",
    "documents.country",
}
_OWNER_FIELDS = (
    ("owner.firstName", "First name"),
    ("owner.lastName", "Last name"),
    ("owner.birthDate", "Date of birth"),
    ("owner.nationality", "Nationality"),
    ("owner.address.line1", "Street address"),
    ("owner.address.city", "City"),
    ("owner.address.postalCode", "Postal code"),
    ("owner.address.country", "Country"),
    ("owner.idType", "Tax id type"),
    ("owner.identifier", "Tax id number"),
    ("owner.ownershipPercentage", "Ownership (%)"),
)
_ID_TYPES = ("SSN", "ITIN", "EIN", "NON_US_TAX_ID")
UBO_SHARE = 25  # percent: an owner of this share or more is an ultimate beneficial owner


@dataclass
class Input:
    name: str
    label: str
    kind: str = "text"  # text | date | country | select | number
    value: str = ""
    options: tuple[tuple[str, str], ...] = ()
    error: str | None = None


@dataclass
class Upload:
    """One document the form asks for: a file input and the document's type."""

    name: str  # the file input's name: doc.<holder>.<error type>
    holder: str  # a customer or beneficial owner id, or NEW_OWNER
    label: str
    accepted: tuple[str, ...]
    chosen_type: str = ""
    error: str | None = None

    @property
    def type_name(self) -> str:
        return f"type.{self.holder}.{self.name.rsplit('.', 1)[-1]}"


@dataclass
class Form:
    customer_type: str
    title: str
    fields: list[Input] = field(default_factory=list)
    owner_fields: list[Input] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)
    general_errors: list[str] = field(default_factory=list)

    def inputs(self) -> list[Input]:
        return [*self.fields, *self.owner_fields]

    def by_name(self, name: str) -> Input | Upload | None:
        items: list[Input | Upload] = [*self.inputs(), *self.uploads]
        for item in items:
            if item.name == name or (isinstance(item, Upload) and item.type_name == name):
                return item
        return None

    def text_names(self) -> frozenset[str]:
        return frozenset([*(i.name for i in self.inputs()), *(u.type_name for u in self.uploads)])

    def file_names(self) -> frozenset[str]:
        return frozenset(u.name for u in self.uploads)


def _country_options() -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(((code, name) for code, name in countries.catalog().items()), key=lambda item: item[1])
    )


def _input(name: str, label: str, value: Any = None) -> Input:
    kind = "date" if name in _DATE_FIELDS else "country" if name in _COUNTRY_FIELDS else "text"
    options = _country_options() if kind == "country" else ()
    if name == "owner.idType":
        kind, options = "select", tuple((t, t.replace("_", " ")) for t in _ID_TYPES)
    if name == "owner.ownershipPercentage":
        kind = "number"
    return Input(
        name=name, label=label, kind=kind, value="" if value is None else str(value), options=options
    )


def _label(path: str) -> str:
    for table in requirements.BY_CUSTOMER_TYPE.values():
        for requirement in table.fields:
            if requirement.path == path:
                return requirement.label
    for extras in requirements.BY_CURRENCY.values():
        for requirement in (r for group in extras.values() for r in group):
            if requirement.path == path:
                return requirement.label
    return requirements.LABELS.get(path, path.rsplit(".", 1)[-1])


def _value(customer: dict[str, Any], path: str) -> Any:
    node: Any = customer
    for part in path.split(".")[1:]:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def build_form(customer: dict[str, Any], errors: list[dict[str, Any]]) -> Form:
    """The form for what `errors` (a verification's) say is missing, prefilled from the customer."""
    kind = customer["customerType"]
    form = Form(
        customer_type=kind, title="Verify your business" if kind == "BUSINESS" else "Verify your identity"
    )
    for error in errors:
        path = error.get("field")
        if error["type"] in ("MISSING_FIELD", "INVALID_FIELD") and path and path.startswith("customer."):
            if path == "customer.address":  # a provider asks for the whole address
                for sub, label in (
                    ("line1", "Street address"),
                    ("city", "City"),
                    ("postalCode", "Postal code"),
                    ("country", "Country"),
                ):
                    if form.by_name(f"{path}.{sub}") is None:
                        form.fields.append(_input(f"{path}.{sub}", label, _value(customer, f"{path}.{sub}")))
                continue
            if form.by_name(path) is None:
                item = _input(path, _label(path), _value(customer, path))
                if error["type"] == "INVALID_FIELD":
                    item.error = error["reason"]
                form.fields.append(item)
        elif error["type"] in ("MISSING_BENEFICIAL_OWNER", "MISSING_CONTROL_PERSON"):
            form.owner_fields = [_input(name, label) for name, label in _OWNER_FIELDS]
            identity = requirements.IDENTITY
            form.uploads.append(
                Upload(
                    f"doc.{NEW_OWNER}.{identity.error_type}",
                    NEW_OWNER,
                    f"Owner's {identity.label.lower()}",
                    identity.accepted,
                )
            )
        elif error["type"].startswith("MISSING_") and error["type"].endswith("_DOCUMENT"):
            holder = error["resourceId"]
            label = next(
                (r.label for r in requirements.DOCUMENTS if r.error_type == error["type"]),
                error["reason"],
            )
            if holder.startswith("BeneficialOwner:"):
                label = f"{label} (beneficial owner)"
            form.uploads.append(
                Upload(
                    f"doc.{holder}.{error['type']}",
                    holder,
                    label,
                    tuple(error.get("acceptedDocumentTypes") or ()),
                )
            )
    if form.uploads:
        country = _value(customer, "customer.address.country") or ""
        form.fields.append(_input("documents.country", "Country that issued the documents", country))
    return form


def _page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _templates.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status, headers=_HTML_HEADERS)


_REFUSALS = {
    "unknown": (
        404,
        "Link not found",
        "This verification link does not exist. Check that you copied all of it, or ask for a new one.",
    ),
    "used": (
        410,
        "Link already used",
        "This verification link has already been used to submit your details. Each link works once: ask for a new one if you need to change something.",
    ),
    "expired": (410, "Link expired", "This verification link has expired. Ask for a new one."),
}


def _refusal_page(reason: str) -> HTMLResponse:
    status, title, text = _REFUSALS[reason]
    return _page("message.html", status, title=title, text=text)


def _failure_page(error: BaseException) -> HTMLResponse:
    if isinstance(error, ApiError) and error.status in (413,):
        return _page(
            "message.html",
            413,
            title="File too large",
            text="A file is larger than 10 MB. Go back and choose a smaller file.",
        )
    if isinstance(error, ApiError) and error.status == 503:
        return _page(
            "message.html",
            503,
            title="Try again shortly",
            text="We cannot take your details right now. Please try again in a minute.",
        )
    if isinstance(error, ApiError) and error.status < 500:
        return _page(
            "message.html",
            error.status,
            title="Please try again",
            text="We could not read what your browser sent. Go back and submit the form again.",
        )
    log.error("kyc_page.failed", error=type(error).__name__)
    return _page(
        "message.html",
        500,
        title="Something went wrong",
        text="We could not take your details. Please try again later.",
    )


async def _current(
    request: Request, token: str
) -> tuple[onboarding_service.LinkState, dict[str, Any] | None, list[dict[str, Any]]]:
    async with get_db(request).read() as session:
        state = await onboarding_service.open_link(session, token=token)
        if state.tenant is not None:  # the page works on the link's tenant's business time
            clock.use(state.tenant.clock)
        if state.refusal is not None or state.link is None:
            return state, None, []
        customer = await customers_service.get_customer(
            session, tenant_id=state.link.tenant_id, customer_id=state.link.customer_id
        )
        errors = await onboarding_service.missing_for_verification(
            session, tenant_id=state.link.tenant_id, customer_id=state.link.customer_id
        )
    return state, customer.to_api(), errors


@router.get(PAGE_PATH + "/{token}", response_class=HTMLResponse)
async def show(token: str, request: Request) -> Response:
    """The hosted verification page."""
    try:
        state, customer, errors = await _current(request, token)
        if state.refusal is not None or customer is None:
            return _refusal_page(state.refusal or "unknown")
        return _page("form.html", form=build_form(customer, errors), customer=customer)
    except Exception as error:  # an HTML page, never a stack trace
        return _failure_page(error)


@router.post(PAGE_PATH + "/{token}", response_class=HTMLResponse)
async def submit(token: str, request: Request) -> Response:
    """The hosted page's form, submitted."""
    parsed: onboarding_service.ParsedForm | None = None
    try:
        state, customer, errors = await _current(request, token)
        if state.refusal is not None or customer is None or state.link is None:
            return _refusal_page(state.refusal or "unknown")
        form = build_form(customer, errors)
        link = state.link
        try:
            parsed = await onboarding_service.parse_form(
                request.stream(),
                content_type=request.headers.get("content-type"),
                store=DOCUMENT_STORE.get(),
                tenant_id=link.tenant_id,
                max_file_bytes=request.app.state.settings.document_max_bytes,
                allowed_fields=form.text_names(),
                file_fields=form.file_names(),
            )
        except InvalidInput as refused:
            _place(form, refused)
            return _page("form.html", 400, form=form, customer=customer)
        _fill(form, parsed)
        try:
            async with get_db(request).transaction() as session:
                outcome = await _apply(
                    session,
                    link=link,
                    customer=customer,
                    form=form,
                    parsed=parsed,
                    settings=request.app.state.settings,
                )
        except _LinkUsed:  # used meanwhile (another tab): this submission changes nothing
            await onboarding_service.discard_document_files(parsed.keys())
            return _refusal_page("used")
        except InvalidInput as refused:
            await onboarding_service.discard_document_files(parsed.keys())
            _place(form, refused)
            return _page("form.html", 400, form=form, customer=customer)
        parsed = None  # committed: the documents own their files now
        if outcome.verification_status == VerificationStatus.RESOLVE_ERRORS:
            # Still something missing (a file not chosen): what was given is kept; ask for the rest.
            state, customer, errors = await _current(request, token)
            again = build_form(customer or {}, errors)
            for error in errors:
                item = again.by_name(error.get("field") or "") or next(
                    (
                        u
                        for u in again.uploads
                        if u.holder == error["resourceId"] and u.name.endswith(error["type"])
                    ),
                    None,
                )
                if item is not None:
                    item.error = error["reason"]
            return _page("form.html", 400, form=again, customer=customer)
        if link.redirect_uri:
            return RedirectResponse(link.redirect_uri, status_code=303, headers=_HTML_HEADERS)
        return _page(
            "message.html",
            200,
            title="Thank you",
            text="Your details were submitted for verification. You can close this page.",
        )
    except Exception as error:
        if parsed is not None:
            await onboarding_service.discard_document_files(parsed.keys())
        return _failure_page(error)


def _fill(form: Form, parsed: onboarding_service.ParsedForm) -> None:
    for item in form.inputs():
        item.value = parsed.fields.get(item.name, "").strip()
    for upload in form.uploads:
        upload.chosen_type = parsed.fields.get(upload.type_name, "")


def _place(form: Form, refused: ApiError) -> None:
    """Each problem of a refusal beside its field (API names mapped to the form's)."""
    for problem in refused.details.get("fields", []) or [{"field": "", "message": refused.message}]:
        name = str(problem.get("field", ""))
        candidates = [name, f"customer.{name}", f"owner.{name.removeprefix('personalInfo.')}"]
        item = next((found for c in candidates if (found := form.by_name(c)) is not None), None)
        if item is not None and item.error is None:
            item.error = str(problem.get("message", "is not valid"))
        elif item is None:
            form.general_errors.append(
                f"{problem.get('field', '')}: {problem.get('message', '')}".strip(": ")
            )


@dataclass
class _Outcome:
    verification_status: str


def _set(target: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value


_SNAKE = {
    "businessInfo": "business_info",
    "postalCode": "postal_code",
    "fullName": "full_name",
    "birthDate": "birth_date",
    "legalName": "legal_name",
    "taxId": "tax_id",
    "incorporatedOn": "incorporated_on",
    "registrationNumber": "registration_number",
    "businessType": "business_type",
}


async def _apply(
    session: Any,
    *,
    link: Any,
    customer: dict[str, Any],
    form: Form,
    parsed: onboarding_service.ParsedForm,
    settings: Settings,
) -> _Outcome:
    tenant = await tenants_service.load(session, tenant_id=link.tenant_id)
    problems: list[dict[str, str]] = []
    # The customer's fields, as a PATCH would send them (an address is replaced whole: merged here).
    changes: dict[str, Any] = {}
    for item in form.fields:
        if not item.name.startswith("customer.") or not item.value:
            continue
        _set(changes, [_SNAKE.get(p, p) for p in item.name.split(".")[1:]], item.value)
    if "address" in changes:
        current = {_SNAKE.get(k, k): v for k, v in (customer.get("address") or {}).items()}
        changes["address"] = {**current, **changes["address"]}
    if "business_info" in changes and "incorporated_on" in changes["business_info"]:
        try:
            changes["business_info"]["incorporated_on"] = date.fromisoformat(
                changes["business_info"]["incorporated_on"]
            )
        except ValueError:
            problems.append(
                {"field": "customer.businessInfo.incorporatedOn", "message": "must be a date (YYYY-MM-DD)"}
            )
    if problems:
        raise InvalidInput("invalid input", details={"fields": problems})
    if changes:
        await customers_service.update_customer(
            session,
            tenant=tenant,
            customer_id=link.customer_id,
            changes={"customer_type": customer["customerType"], **changes},  # type: ignore[typeddict-item]
            settings=settings,
        )
    holders: dict[str, str | None] = {NEW_OWNER: None}
    if form.owner_fields:
        holders[NEW_OWNER] = await _create_owner(
            session, tenant_id=link.tenant_id, customer_id=link.customer_id, form=form
        )
    country = parsed.fields.get("documents.country", "").strip()
    for upload in form.uploads:
        stored = parsed.files.get(upload.name)
        if stored is None:
            continue
        chosen = upload.chosen_type or (upload.accepted[0] if upload.accepted else "")
        if chosen not in upload.accepted or chosen not in DOCUMENT_TYPES:
            raise InvalidInput(
                "invalid input",
                details={
                    "fields": [
                        {"field": upload.type_name, "message": "choose one of the listed document types"}
                    ]
                },
            )
        metadata = {"documentType": chosen, "country": country}
        bad = onboarding_service.document_metadata_problems(metadata, required=("documentType", "country"))
        if bad:
            raise InvalidInput(
                "invalid input",
                details={
                    "fields": [
                        {**p, "field": "documents.country" if p["field"] == "country" else upload.type_name}
                        for p in bad
                    ]
                },
            )
        holder = holders[NEW_OWNER] if upload.holder == NEW_OWNER else upload.holder
        if holder is None:
            continue
        await onboarding_service.create_document(
            session, tenant_id=link.tenant_id, holder_id=holder, fields=metadata, stored=stored
        )
    verification = await onboarding_service.submit_verification(
        session, tenant_id=link.tenant_id, customer_id=link.customer_id
    )
    # submitted (IN_PROGRESS), or already under review or decided: either way the link has done its work
    submitted = verification.verification_status != VerificationStatus.RESOLVE_ERRORS
    if submitted and not await onboarding_service.use_link(session, link=link):
        raise _LinkUsed("the link was used meanwhile")
    return _Outcome(verification.verification_status)


class _LinkUsed(Exception):
    """The link was used by another submission meanwhile: this one's changes roll back."""


async def _create_owner(session: Any, *, tenant_id: str, customer_id: str, form: Form) -> str:
    values = {item.name.removeprefix("owner."): item.value for item in form.owner_fields}
    info: dict[str, Any] = {}
    missing = [item for item in form.owner_fields if not item.value]
    if missing:
        raise InvalidInput(
            "invalid input",
            details={"fields": [{"field": item.name, "message": "is required"} for item in missing]},
        )
    for name, value in values.items():
        if name != "ownershipPercentage":
            _set(info, name.split("."), value)
    try:
        BeneficialOwnerPersonalInfo.model_validate(info)
    except ValidationError as error:
        fields = [
            {
                "field": "owner." + ".".join(str(p) for p in e["loc"]),
                "message": e["msg"].removeprefix("Value error, "),
            }
            for e in error.errors()
        ]
        raise InvalidInput("invalid input", details={"fields": fields}) from None
    try:
        share = int(values["ownershipPercentage"])
    except ValueError:
        share = -1
    if not 0 <= share <= 100:
        raise InvalidInput(
            "invalid input",
            details={
                "fields": [
                    {"field": "owner.ownershipPercentage", "message": "must be a whole number from 0 to 100"}
                ]
            },
        )
    if info.get("idType") not in _ID_TYPES:
        raise InvalidInput(
            "invalid input",
            details={"fields": [{"field": "owner.idType", "message": "choose a tax id type"}]},
        )
    created = await onboarding_service.create_owner(
        session,
        tenant_id=tenant_id,
        customer_id=customer_id,
        # The page asks for an owner who controls the business (form.html): its control person, and a UBO
        # when the share makes it one.
        roles=["UBO", "CONTROL_PERSON"] if share >= UBO_SHARE else ["CONTROL_PERSON"],
        ownership_percentage=share,
        personal_info=info,
    )
    return created.id
