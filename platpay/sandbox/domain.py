"""The sandbox's own controls as the app discovers them: time control (/sandbox/clock), per-tenant reset
(/sandbox/reset) and fault injection (the Svc-Sandbox-Fault header, registered with authentication)."""

from platpay.kit.domain_spec import Domain, Mount
from platpay.sandbox import endpoints, faults

DOMAIN = Domain(name="sandbox", routers=(Mount(endpoints.router),), jobs=(faults,))
