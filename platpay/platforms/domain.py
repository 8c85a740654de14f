"""Platforms and their configuration as the app discovers them (the tables are the tenants domain's)."""

from platpay.kit.domain_spec import Domain, Mount
from platpay.platforms import endpoints

DOMAIN = Domain(name="platforms", routers=(Mount(endpoints.router),))
