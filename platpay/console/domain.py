"""The console (/console) as the app discovers it: server-rendered pages for the people who run a platform,
calling the same services as the API."""

from platpay.console import assets, signin
from platpay.console.pages import (
    agents,
    cards,
    customers,
    developers,
    ledger,
    overview,
    sandbox,
    transactions,
    webhooks,
)
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(
    name="console",
    routers=(
        Mount(assets.router),
        Mount(signin.router),
        Mount(overview.router),
        Mount(customers.router),
        Mount(transactions.router),
        Mount(ledger.router),
        Mount(webhooks.router),
        Mount(agents.router),
        Mount(cards.router),
        Mount(sandbox.router),
        Mount(developers.router),
    ),
)
