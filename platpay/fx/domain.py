"""FX as the app discovers it."""

from platpay.fx import endpoints, jobs, models
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(
    name="fx",
    routers=(Mount(endpoints.router, order=140), Mount(endpoints.sandbox_router, order=150)),
    models=(models,),
    jobs=(jobs,),
)
