"""Payments as the app discovers them: transactions, transfers, incoming payments, lookups."""

from platpay.kit.domain_spec import Domain, Mount
from platpay.payments import endpoints, incoming_endpoints, incoming_jobs, jobs, lookup_endpoints, models

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
    ),
    models=(models,),
    jobs=(jobs, incoming_jobs),
    event_types=frozenset(
        {
            *(f"OUTGOING_PAYMENT.{status}" for status in _OUTGOING),
            *(f"INCOMING_PAYMENT.{status}" for status in ("PENDING", "COMPLETED", "FAILED")),
        }
    ),
)
