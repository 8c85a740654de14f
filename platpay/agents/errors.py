"""Agents errors: each class carries its code and HTTP status (INTERFACE-FACTS §1.3: policy refusals are a
403 without a specific code, approve/reject of a decided action a 409 CONFLICT)."""

from __future__ import annotations

from platpay.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthorized


class AgentNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


class AgentActionNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


class DeviceCodeNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


class DeviceCodeUnusable(InvalidInput):
    """Redeeming a code that was used, replaced or has expired."""

    code = "INVALID_INPUT"


class AgentAlreadyConnected(Conflict):
    code = "CONFLICT"


class ActionNotPending(Conflict):
    code = "CONFLICT"


class PolicyForbids(Forbidden):
    """A missing permission, an account the policy does not allow, a limit the request would exceed, or a
    paused agent: `details` carries the policy's rule, reason and what remains."""

    code = "FORBIDDEN"


class NotAnAgent(Forbidden):
    """A platform credential on an /agents/me operation."""

    code = "FORBIDDEN"


class InvalidAgentToken(Unauthorized):
    code = "UNAUTHORIZED"


class AccountNotFound(NotFound):
    """An account that is not the agent's customer's (or does not exist): the same answer for both."""

    code = "REFERENCE_NOT_FOUND"


class QuoteNotFound(NotFound):
    code = "QUOTE_NOT_FOUND"


class TransactionNotFound(NotFound):
    code = "TRANSACTION_NOT_FOUND"
