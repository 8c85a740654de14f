"""Platforms' tenants as the app discovers them: tables only (others read them through tenants.service)."""

from platpay.kit.domain_spec import Domain
from platpay.tenants import models

DOMAIN = Domain(name="tenants", models=(models,))
