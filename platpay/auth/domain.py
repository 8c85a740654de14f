"""API tokens as the app discovers them."""

from platpay.auth import endpoints, models
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(name="auth", routers=(Mount(endpoints.router),), models=(models,))
