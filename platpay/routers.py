"""Every router the API serves, in one place (a new domain adds its router here)."""

from __future__ import annotations

from platpay import BASE_PATH
from platpay.accounts.endpoints import router as accounts_router
from platpay.auth.endpoints import router as tokens_router
from platpay.config import Settings
from platpay.customers import bulk as bulk_service
from platpay.customers.bulk_endpoints import UPLOAD_PATH
from platpay.customers.bulk_endpoints import router as bulk_customers_router
from platpay.customers.endpoints import router as customers_router
from platpay.customers.endpoints import sandbox_router as sandbox_customers_router
from platpay.events.endpoints import router as webhooks_router
from platpay.events.endpoints import sandbox_router as sandbox_webhooks_router
from platpay.fx.endpoints import router as exchange_rates_router
from platpay.payments.endpoints import router as payments_router
from platpay.payments.endpoints import sandbox_router as sandbox_payments_router
from platpay.payments.incoming_endpoints import router as incoming_router
from platpay.payments.incoming_endpoints import sandbox_router as sandbox_incoming_router
from platpay.payments.lookup_endpoints import router as lookups_router
from platpay.payments.quotes.endpoints import lookup_router as receiver_lookups_router
from platpay.payments.quotes.endpoints import router as quotes_router
from platpay.payments.quotes.endpoints import sandbox_router as sandbox_quotes_router
from platpay.platforms.endpoints import router as config_router

# Order matters where paths overlap: /customers/internal-accounts and /customers/bulk/... before
# /customers/{customerId}.
ROUTERS = (
    config_router,
    tokens_router,
    accounts_router,
    bulk_customers_router,
    customers_router,
    webhooks_router,
    sandbox_webhooks_router,
    sandbox_customers_router,
    incoming_router,  # /transactions/{transactionId}/approve|reject before any broader /transactions/... route
    payments_router,
    sandbox_payments_router,
    sandbox_incoming_router,
    lookups_router,
    quotes_router,
    exchange_rates_router,  # between quotes and receiver lookups: /openapi.json keeps its order
    receiver_lookups_router,
    sandbox_quotes_router,
)


def body_limits(settings: Settings) -> dict[str, int]:
    """Paths that take larger bodies than PLATPAY_MAX_BODY_BYTES (uploads)."""
    # The CSV limit itself is checked on the file (a clear 400); the body may exceed it by the multipart
    # envelope, and anything beyond that is cut off at the edge with 413.
    return {
        f"{BASE_PATH}{UPLOAD_PATH}": settings.bulk_import_max_bytes + bulk_service.MULTIPART_ALLOWANCE_BYTES
    }
