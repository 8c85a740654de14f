"""Imports every models module so that Base.metadata holds every table."""

from platpay.auth import models as _auth  # noqa: F401
from platpay.events import models as _events  # noqa: F401
from platpay.jobs import models as _jobs  # noqa: F401
from platpay.kit import idempotency as _idempotency  # noqa: F401
from platpay.platforms import models as _platforms  # noqa: F401
