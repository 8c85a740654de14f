from __future__ import annotations

from platpay.errors import Conflict


class ClockAhead(Conflict):
    """POST /sandbox/clock/reset while the tenant's clock is ahead of real time: going back to real time
    would move it backwards."""

    code = "CLOCK_AHEAD_OF_REAL_TIME"
