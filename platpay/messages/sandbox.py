"""The sandbox's custody of messages: the mailbox.

Every message of a sandbox tenant is kept readable once sent, so the platform can read it back through
`GET /sandbox/mailbox` (the codes its test users were sent, for instance); it still goes out through the
configured sender as well. `providers.custody_for` is the one place that picks this for sandbox tenants.
"""

from __future__ import annotations

from platpay.messages.types import Custody

MAILBOX = Custody("mailbox", sealed=False, kept=True)
