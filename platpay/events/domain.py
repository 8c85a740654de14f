"""Webhooks as the app discovers them: the outbox tables, delivery jobs, /webhooks routes."""

from platpay.events import delivery, endpoints, jobs, models, types
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(
    name="events",
    routers=(Mount(endpoints.router), Mount(endpoints.sandbox_router)),
    models=(models,),
    jobs=(delivery, jobs),
    event_types=frozenset({types.TEST}),
)
