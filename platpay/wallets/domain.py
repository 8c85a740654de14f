"""Embedded wallets as the app discovers them: custody, credentials, sessions, signed retries, export and
privacy (wallets sits above accounts and below fx and payments; docs/architecture.md)."""

from platpay.kit.domain_spec import Domain, Mount
from platpay.wallets import email_change, endpoints, jobs, models, providers, provisioning, sandbox

_SUBSCRIBERS = (provisioning, email_change)  # hook subscribers register at import (kit/hooks.py)

DOMAIN = Domain(
    name="wallets",
    routers=(
        # /auth/credentials/passkey-challenges is declared before /auth/credentials/{id} in its router
        Mount(endpoints.router),
        Mount(endpoints.account_router),
    ),
    models=(models,),
    jobs=(jobs,),
    providers=(providers, sandbox),
)
