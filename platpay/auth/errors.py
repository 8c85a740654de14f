from __future__ import annotations

from platpay.errors import Conflict, Forbidden, NotFound


class TokenNotFound(NotFound):
    code = "TOKEN_NOT_FOUND"


class PermissionEscalation(Forbidden):
    code = "FORBIDDEN"


class LastManageToken(Conflict):
    code = "CONFLICT"
