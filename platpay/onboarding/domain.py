"""Onboarding as the app discovers it: verifications, beneficial owners, documents, KYC links and the
hosted verification page."""

from platpay import BASE_PATH
from platpay.config import Settings
from platpay.kit.domain_spec import Domain, Mount
from platpay.onboarding import endpoints, jobs, models, providers, sandbox, storage
from platpay.onboarding.page import endpoints as page_endpoints
from platpay.onboarding.state import VerificationStatus


def _body_limits(settings: Settings) -> dict[str, int]:
    # The file limit itself is enforced on the file as it streams (413); the body may exceed it by the
    # multipart envelope and metadata. The hosted page's form carries several documents.
    single = settings.document_max_bytes + page_endpoints.ENVELOPE_ALLOWANCE_BYTES
    return {
        f"{BASE_PATH}/documents": single,
        f"{BASE_PATH}/documents/*": single,
        f"{page_endpoints.PAGE_PATH}/*": page_endpoints.MAX_FILES * settings.document_max_bytes
        + page_endpoints.ENVELOPE_ALLOWANCE_BYTES,
    }


DOMAIN = Domain(
    name="onboarding",
    routers=(
        Mount(endpoints.router),
        Mount(endpoints.documents_router),
        Mount(page_endpoints.router),
    ),
    models=(models,),
    jobs=(jobs,),
    providers=(providers, sandbox, storage),
    event_types=frozenset(f"VERIFICATION.{status}" for status in VerificationStatus),
    body_limits=_body_limits,
)
