"""Customers and bulk import as the app discovers them."""

from platpay import BASE_PATH
from platpay.config import Settings
from platpay.customers import endpoints, models
from platpay.customers.bulk import endpoints as bulk_endpoints
from platpay.customers.bulk import jobs as bulk_jobs
from platpay.customers.bulk import models as bulk_models
from platpay.customers.bulk import service as bulk
from platpay.customers.contact import endpoints as contact_endpoints
from platpay.customers.contact import models as contact_models
from platpay.kit.domain_spec import Domain, Mount


def _body_limits(settings: Settings) -> dict[str, int]:
    # The CSV limit itself is checked on the file (a clear 400); the body may exceed it by the multipart
    # envelope, and anything beyond that is cut off at the edge with 413.
    return {
        f"{BASE_PATH}{bulk_endpoints.UPLOAD_PATH}": settings.bulk_import_max_bytes
        + bulk.MULTIPART_ALLOWANCE_BYTES
    }


DOMAIN = Domain(
    name="customers",
    routers=(
        Mount(bulk_endpoints.router),
        Mount(endpoints.router),
        Mount(contact_endpoints.router),
        Mount(endpoints.sandbox_router),
        Mount(endpoints.page_router),
    ),
    models=(models, bulk_models, contact_models),
    jobs=(bulk_jobs,),
    event_types=frozenset(
        {
            *(
                f"CUSTOMER.{check}_{result}"
                for check in ("KYC", "KYB")
                for result in ("APPROVED", "REJECTED", "PENDING")
            ),
            "BULK_UPLOAD.COMPLETED",
            "BULK_UPLOAD.FAILED",
        }
    ),
    body_limits=_body_limits,
)
