"""What agents' reads return to callers (the console's views): frozen dataclasses of plain values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class PendingAction:
    """An agent's action awaiting the platform's approval (POST /agents/{agentId}/actions/{actionId}/approve),
    with its agent's name; `amount` in minor units of `currency`."""

    id: str
    agent_id: str
    agent_name: str
    customer_id: str
    platform_customer_id: str
    type: str  # ActionType
    amount: int
    currency: str
    quote_id: str | None
    transfer: dict[str, Any] | None  # AgentTransferDetails as the API spells it
    decision: dict[str, Any]  # the policy's rule, reason and remaining headroom
    created_at: datetime


@dataclass(frozen=True, slots=True)
class LimitUsage:
    """One limit of an agent's policy and what the agent used of it in the current window, in minor units of
    the policy currency (`dailyCount`: a number of transactions). `limit` None: the policy sets none
    (`remaining` None too). `resets` is the first day (UTC) of the next window, None for perTransaction."""

    name: str  # perTransaction | daily | dailyCount | monthly
    limit: int | None
    used: int
    remaining: int | None
    window: str  # TRANSACTION | DAY | MONTH
    resets: str | None  # YYYY-MM-DD
    currency: str | None  # the policy currency; None for dailyCount
