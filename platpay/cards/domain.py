"""Cards as the app discovers them."""

from platpay.cards import endpoints, jobs, models, providers, sandbox, service, transactions
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(
    name="cards",
    routers=(
        Mount(endpoints.router),
        Mount(endpoints.sandbox_router),
        Mount(endpoints.embed_router),
    ),
    models=(models,),
    jobs=(jobs,),
    providers=(providers, sandbox),
    event_types=frozenset({service.STATE_CHANGE, service.FUNDING_SOURCE_CHANGE, *transactions.EVENT_TYPES}),
)
