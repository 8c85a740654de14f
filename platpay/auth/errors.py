from __future__ import annotations

from platpay.errors import Conflict, Forbidden, ResourceNotFound


class TokenNotFound(ResourceNotFound):
    code = "TOKEN_NOT_FOUND"
    resource, id_key = "token", "tokenId"


class PermissionEscalation(Forbidden):
    code = "FORBIDDEN"


class LastManageToken(Conflict):
    code = "CONFLICT"
