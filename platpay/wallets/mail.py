"""The OTP email of an EMAIL_OTP credential, composed from the platform's embeddedWalletConfig (app name,
sender, reply-to, logo) and queued through the messages domain in the caller's transaction."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from platpay.db.unit_of_work import LeanSession
from platpay.kit import clock
from platpay.messages import service as messages_service
from platpay.tenants.context import TenantContext

CATEGORY = "wallets.otp"
DEFAULT_SENDER_NAME = "Notifications"


@dataclass(frozen=True, slots=True)
class OtpEmail:
    subject: str
    text: str
    html: str
    sender_address: str | None
    sender_name: str
    reply_to: str | None


class OtpIssuance(Protocol):
    """What mail needs of an OTP issuance (otp.Issued)."""

    @property
    def code(self) -> str: ...

    @property
    def expires_at(self) -> datetime: ...


def compose(tenant: TenantContext, *, code: str, expires_in_seconds: int) -> OtpEmail:
    config = tenant.embedded_wallet_config or {}
    app = config.get("appName") or "your wallet"
    minutes = max(1, round(expires_in_seconds / 60))
    text = (
        f"Your {app} verification code is {code}\n\n"
        f"It expires in {minutes} minute{'s' if minutes != 1 else ''}. If you did not ask for it, ignore this email."
    )
    logo = config.get("logoUrl")
    logo_html = f'<img src="{html.escape(logo)}" alt="" width="340" height="124"><br>' if logo else ""
    body = (
        f"<html><body>{logo_html}<p>Your {html.escape(app)} verification code is</p>"
        f'<p style="font-size:28px;letter-spacing:4px"><b>{html.escape(code)}</b></p>'
        f"<p>It expires in {minutes} minute{'s' if minutes != 1 else ''}.</p></body></html>"
    )
    return OtpEmail(
        subject=f"Your {app} verification code",
        text=text,
        html=body,
        sender_address=config.get("sendFromEmailAddress"),
        sender_name=config.get("sendFromEmailSenderName") or DEFAULT_SENDER_NAME,
        reply_to=config.get("replyToEmailAddress"),
    )


async def send_otp(session: LeanSession, *, tenant: TenantContext, to: str, issued: OtpIssuance) -> str:
    """Queue the OTP email through the messages domain, in the caller's transaction (its job sends it once
    that commits; sandbox tenants can read it in GET /sandbox/mailbox). The message's id."""
    expires_in = max(1, int((issued.expires_at - clock.now(tenant)).total_seconds()))
    email = compose(tenant, code=issued.code, expires_in_seconds=expires_in)
    return await messages_service.send_email(
        session,
        tenant=tenant,
        to=to,
        subject=email.subject,
        text=email.text,
        html=email.html,
        category=CATEGORY,
        sender_address=email.sender_address,
        sender_name=email.sender_name,
        reply_to=email.reply_to,
    )
