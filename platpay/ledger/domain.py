"""The ledger as the app discovers it: tables only (other domains post through ledger.service)."""

from platpay.kit.domain_spec import Domain
from platpay.ledger import models

DOMAIN = Domain(name="ledger", models=(models,))
