"""Agents errors: each class carries its code and HTTP status (INTERFACE-FACTS §1.3: policy refusals are a
403 without a specific code, approve/reject of a decided action a 409 CONFLICT)."""

from __future__ import annotations

from platpay.errors import Conflict, Forbidden, InvalidInput, ResourceNotFound, Unauthorized


class AgentNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "agent", "agentId"


class AgentActionNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "action", "actionId"


class DeviceCodeNotFound(ResourceNotFound):
    """The code is a credential: only its prefix and first characters are echoed."""

    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "device code", "code"
    echoed_chars = len("PLATPAY-AGENT-") + 4


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
