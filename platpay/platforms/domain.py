"""Platforms and their configuration as the app discovers them."""

from platpay.kit.domain_spec import Domain, Mount
from platpay.platforms import endpoints, models

DOMAIN = Domain(name="platforms", routers=(Mount(endpoints.router, order=10),), models=(models,))
