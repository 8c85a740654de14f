from __future__ import annotations

from platpay.errors import NotFound


class TenantNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"
