"""The invitation page at an invitation's `url`: one server-rendered HTML document, its style inline and no
external asset (it works offline and leaks nothing to a third party), readable on a phone-sized screen.
Every value shown is HTML-escaped. A PENDING or CLAIMED invitation answers 200, a CANCELLED or EXPIRED one
410 (it can no longer be claimed), an unknown code 404."""

from __future__ import annotations

from decimal import Decimal
from html import escape
from string import Template

from platpay.invitations.schemas import UmaInvitation
from platpay.invitations.state import InvitationStatus
from platpay.kit import clock

# Sent with every page: nothing but the inline style may load, the code in the URL is not passed on as a
# Referer, and nobody caches a page whose status changes.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}

_DOCUMENT = Template(
    """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>$title</title>
<style>
  body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
         background: #f4f5f7; color: #1c2330; }
  main { max-width: 28rem; margin: 2rem auto; padding: 1.5rem; background: #fff; border-radius: 12px;
         box-shadow: 0 1px 4px rgba(0, 0, 0, .08); }
  h1 { font-size: 1.4rem; margin: 0 0 .75rem; }
  .status { display: inline-block; padding: .15rem .6rem; border-radius: 999px; font-size: .85rem;
            font-weight: 600; letter-spacing: .03em; }
  .PENDING { background: #e6f0ff; color: #1747a6; }
  .CLAIMED { background: #e3f6e8; color: #17663a; }
  .CANCELLED, .EXPIRED { background: #fde8e8; color: #9b1c1c; }
  .code { font: 600 1.3rem/1.2 ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .12em;
          padding: .6rem .8rem; background: #f4f5f7; border-radius: 8px; word-break: break-all; }
  .amount { font-size: 1.6rem; font-weight: 700; margin: .25rem 0 .75rem; }
  .sandbox { background: #fff4d6; color: #7a5600; padding: .4rem .8rem; border-radius: 8px; font-size: .9rem; }
  dl { margin: 1rem 0 0; } dt { font-size: .85rem; color: #5b6577; } dd { margin: 0 0 .6rem; word-break: break-all; }
  @media (max-width: 30rem) { main { margin: 0; border-radius: 0; min-height: 100vh; box-sizing: border-box; } }
</style>
</head>
<body>
<main>
$sandbox<h1>$heading</h1>
<p><span class="status $status" id="status">$status_label</span></p>
$body
</main>
</body>
</html>
"""
)

_LABELS: dict[str, str] = {  # by status value (InvitationStatus members are those strings)
    InvitationStatus.PENDING: "Waiting to be claimed",
    InvitationStatus.CLAIMED: "Claimed",
    InvitationStatus.CANCELLED: "Cancelled",
    InvitationStatus.EXPIRED: "Expired",
}


def _amount(invitation: UmaInvitation) -> str | None:
    money = invitation.amount_to_send
    if money is None:
        return None
    value = Decimal(money.amount).scaleb(-money.currency.decimals)
    return f"{money.currency.symbol}{value:,.{money.currency.decimals}f} {money.currency.code}"


def render(invitation: UmaInvitation, *, sandbox: bool) -> tuple[int, str]:
    """(HTTP status, page) for an invitation."""
    status = invitation.status
    inviter = escape(invitation.inviter_uma)
    greeting = f"{invitation.first_name}, you" if invitation.first_name else "You"
    amount = _amount(invitation)
    parts: list[str] = []
    if status == InvitationStatus.PENDING:
        heading = f"{greeting} have been invited to UMA"
        parts.append(f"<p><b>{inviter}</b> invited you.</p>")
        if amount:
            parts.append(f'<p>They want to send you</p><p class="amount">{escape(amount)}</p>')
        parts.append(
            "<p>To accept, give this invitation code to the app of your UMA provider:</p>"
            f'<p class="code" id="code">{escape(invitation.invitation_code)}</p>'
        )
    elif status == InvitationStatus.CLAIMED:
        heading = "This invitation has been claimed"
        parts.append(
            f"<p>{inviter}'s invitation was accepted by <b>{escape(invitation.invitee_uma or '')}</b>.</p>"
        )
    elif status == InvitationStatus.CANCELLED:
        heading = "This invitation was cancelled"
        parts.append(f"<p>{inviter} cancelled this invitation: it can no longer be claimed.</p>")
    else:
        heading = "This invitation has expired"
        parts.append(f"<p>{inviter}'s invitation was not claimed in time and can no longer be claimed.</p>")
    details = [("Invited by", inviter), ("Created", clock.isoformat(invitation.created_at))]
    if invitation.expires_at is not None and status == InvitationStatus.PENDING:
        details.append(("Expires", clock.isoformat(invitation.expires_at)))
    if invitation.claimed_at is not None:
        details.append(("Claimed", clock.isoformat(invitation.claimed_at)))
    parts.append("<dl>" + "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in details) + "</dl>")
    page = _DOCUMENT.substitute(
        title=escape(heading),
        heading=escape(heading),
        status=status,
        status_label=_LABELS[status],
        sandbox='<p class="sandbox">Sandbox invitation: for testing only</p>\n' if sandbox else "",
        body="\n".join(parts),
    )
    return (200 if status in (InvitationStatus.PENDING, InvitationStatus.CLAIMED) else 410), page


def render_not_found() -> str:
    return _DOCUMENT.substitute(
        title="Invitation not found",
        heading="Invitation not found",
        status=InvitationStatus.EXPIRED,
        status_label="Unknown",
        sandbox="",
        body="<p>No invitation has this code. Check the link you were sent.</p>",
    )
