"""Bulk customer import endpoints (SPEC §4.4). Registered before the customers router so that
/customers/bulk/... is never taken for a customer id."""

from __future__ import annotations

from fastapi import File, Request, Response, UploadFile

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db
from platpay.customers.bulk import service as bulk_service
from platpay.customers.bulk.schemas import BulkCustomerImportJob, BulkCustomerImportJobAccepted
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.openapi import request_examples
from platpay.kit.routing import api_router

router = api_router(tags=["Customers"])

UPLOAD_PATH = "/customers/bulk/csv"

_FILE_DESCRIPTION = (
    "UTF-8 CSV, header row first. Columns (SPEC §2): umaAddress, platformCustomerId, customerType "
    "(INDIVIDUAL|BUSINESS) always; INDIVIDUAL rows: fullName, birthDate (YYYY-MM-DD), addressLine1, city, "
    "state, postalCode, country; BUSINESS rows: businessLegalName, addressLine1, city, state, postalCode, "
    "country; optional: addressLine2, email, businessTaxId, businessRegistrationNumber, and "
    "platformAccountId, description (accepted, ignored). Up to PLATPAY_BULK_IMPORT_MAX_BYTES (default 50 MiB)."
)
_EXAMPLE_CSV = (
    "umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country,"
    "businessLegalName\n"
    "$jane.doe@acme.platpay.test,csv-ind-001,INDIVIDUAL,Jane Doe,1990-04-12,1 Main St,Springfield,IL,62701,US,\n"
    "$acme.corp@acme.platpay.test,csv-biz-001,BUSINESS,,,500 Market St,San Francisco,CA,94105,US,Acme Corp\n"
)
UPLOAD_EXAMPLES = request_examples(
    media_type="multipart/form-data",
    twoCustomers=(
        "An individual and a business, one row each (umaAddress on your platform's UMA domain)",
        {"file": _EXAMPLE_CSV},
    ),
)


@router.post(
    UPLOAD_PATH,
    operation_id="uploadCustomersCsv",
    openapi_extra=UPLOAD_EXAMPLES,
    status_code=202,
    response_model=BulkCustomerImportJobAccepted,
    responses={400: {"description": "not a usable CSV: empty, not UTF-8 text, bad header, too large"}},
)
async def upload_customers_csv(
    request: Request,
    file: UploadFile = File(..., description=_FILE_DESCRIPTION),
    idem: Idempotent = Idempotency,
    principal: Principal = Manager,
) -> Response:
    """Upload a CSV of customers to create asynchronously; poll the returned job for progress."""
    settings = request.app.state.settings
    checked = await bulk_service.check_upload(file, max_bytes=settings.bulk_import_max_bytes)

    return await idem.run(
        {"sha256": checked.sha256, "size": checked.size},
        lambda s: bulk_service.start_import(s, tenant_id=principal.tenant.id, upload=file, checked=checked),
        status=202,
    )


@router.get(
    "/customers/bulk/jobs/{jobId}",
    operation_id="getBulkCustomerImportJob",
    response_model=BulkCustomerImportJob,
)
async def get_bulk_import_job(
    jobId: str, request: Request, principal: Principal = Viewer
) -> BulkCustomerImportJob:
    """Get a bulk customer import: status, progress, per-row errors and completion time."""
    async with get_db(request).read() as session:
        return await bulk_service.get_job(session, tenant_id=principal.tenant.id, job_id=jobId)
