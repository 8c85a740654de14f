"""Imports every models module so that Base.metadata holds every table."""

from platpay.accounts import models as _accounts  # noqa: F401
from platpay.auth import models as _auth  # noqa: F401
from platpay.customers import bulk_models as _customers_bulk  # noqa: F401
from platpay.customers import models as _customers  # noqa: F401
from platpay.events import models as _events  # noqa: F401
from platpay.jobs import models as _jobs  # noqa: F401
from platpay.kit import idempotency as _idempotency  # noqa: F401
from platpay.ledger import models as _ledger  # noqa: F401
from platpay.payments import models as _payments  # noqa: F401
from platpay.payments.quotes import models as _quotes  # noqa: F401
from platpay.platforms import models as _platforms  # noqa: F401
