"""Sandbox tenants' clocks as the app discovers them: their table, and the job runner's way to read them
(service registers it). The control API (/sandbox/clock) is served by the sandbox domain."""

from platpay.clocks import models, service
from platpay.kit.domain_spec import Domain

DOMAIN = Domain(name="clocks", models=(models,), jobs=(service,))
