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
        Mount(incoming_endpoints.router),
        Mount(endpoints.router),
        Mount(endpoints.sandbox_router),
        Mount(incoming_endpoints.sandbox_router),
        Mount(lookup_endpoints.router),
        Mount(quote_endpoints.router),
        Mount(quote_endpoints.lookup_router),
        Mount(quote_endpoints.sandbox_router),
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
