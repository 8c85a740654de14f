"""FX as the app discovers it: GET /exchange-rates (rates, pricing and fees are used by payments)."""

from platpay.fx import endpoints, providers
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(name="fx", routers=(Mount(endpoints.router),), providers=(providers,))
