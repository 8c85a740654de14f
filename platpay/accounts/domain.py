"""Internal and external accounts as the app discovers them."""

from platpay.accounts import endpoints, jobs, models, providers, sandbox, service
from platpay.accounts.external import service as external_service
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(
    name="accounts",
    # /customers/internal-accounts and /customers/external-accounts before /customers/{customerId}
    routers=(Mount(endpoints.router),),
    models=(models,),
    jobs=(jobs,),
    providers=(providers, sandbox),
    event_types=frozenset({*service.EVENT_TYPES, external_service.STATUS_UPDATED}),
)
