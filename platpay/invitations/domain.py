"""UMA invitations as the app discovers them: the API, the public invitation page, the expiry job."""

from platpay.invitations import endpoints, jobs, models
from platpay.invitations.service import CLAIMED_EVENT
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(
    name="invitations",
    routers=(Mount(endpoints.router), Mount(endpoints.page_router)),
    models=(models,),
    jobs=(jobs,),
    event_types=frozenset({CLAIMED_EVENT}),
)
