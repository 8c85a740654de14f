"""Payments as the app discovers them: transactions, transfers, incoming payments, lookups."""

from platpay.kit.domain_spec import Domain, Mount
from platpay.payments import endpoints, jobs, models, providers, sandbox
from platpay.payments.incoming import endpoints as incoming_endpoints
from platpay.payments.incoming import jobs as incoming_jobs
from platpay.payments.lookups import endpoints as lookup_endpoints
from platpay.payments.quotes import endpoints as quote_endpoints
from platpay.payments.quotes import jobs as quote_jobs
from platpay.payments.quotes import models as quote_models

_OUTGOING = (
    "PENDING",
    "PROCESSING",
    "COMPLETED",
    "FAILED",
    "EXPIRED",
    "REFUND_PENDING",
    "REFUND_COMPLETED",
    "REFUND_FAILED",
)

DOMAIN = Domain(
    name="payments",
    routers=(
        # /transactions/{transactionId}/approve|reject before any broader /transactions/... route
        Mount(incoming_endpoints.router, order=90),
        Mount(endpoints.router, order=100),
        Mount(endpoints.sandbox_router, order=110),
        Mount(incoming_endpoints.sandbox_router, order=120),
        Mount(lookup_endpoints.router, order=130),
        Mount(quote_endpoints.router, order=140),
        # fx's GET /exchange-rates is 142: /openapi.json keeps its order
        Mount(quote_endpoints.lookup_router, order=144),
        Mount(quote_endpoints.sandbox_router, order=150),
    ),
    models=(models, quote_models),
    jobs=(jobs, incoming_jobs, quote_jobs),
    providers=(providers, sandbox),
    event_types=frozenset(
        {
            *(f"OUTGOING_PAYMENT.{status}" for status in _OUTGOING),
            *(
                f"INCOMING_PAYMENT.{status}"
                for status in (
                    "PENDING",
                    "COMPLETED",
                    "FAILED",
                    "REFUND_PENDING",
                    "REFUND_COMPLETED",
                    "REFUND_FAILED",
                )
            ),
        }
    ),
)
