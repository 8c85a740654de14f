"""Internal and external accounts as the app discovers them."""

from platpay.accounts import endpoints, jobs, models
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(
    name="accounts",
    # /customers/internal-accounts and /customers/external-accounts before /customers/{customerId}
    routers=(Mount(endpoints.router, order=30),),
    models=(models,),
    jobs=(jobs,),
    event_types=frozenset({"INTERNAL_ACCOUNT.BALANCE_UPDATED", "INTERNAL_ACCOUNT.STATUS_UPDATED"}),
)
