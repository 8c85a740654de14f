"""The wallets domain's tables: custody, credentials, sessions, pending signed-retry challenges, OTPs, the
per-tenant enclave key and the audit trail. Secrets are sealed under the master key (kit/crypto/sealing.py);
session private keys and OTP codes are never stored (public keys and keyed digests only)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime
from platpay.wallets.state import CredentialStatus

_LIVE = text("revoked_at IS NULL")


class WalletRow(Base):
    """The secret of one EMBEDDED_WALLET internal account (a BIP-39 mnemonic), as its custody sealed it."""

    __tablename__ = "wallets"
    __table_args__ = (Index("ix_wallets_tenant_customer", "tenant_id", "customer_id"),)

    account_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("internal_accounts.id"), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("customers.id"))
    custody: Mapped[str] = mapped_column(String(64))  # the custody implementation that sealed it
    sealed_secret: Mapped[str] = mapped_column(Text)  # opaque to everyone but that custody
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class CredentialRow(Base):
    """An authentication credential (AuthMethod) of a wallet: EMAIL_OTP, OAUTH or PASSKEY."""

    __tablename__ = "auth_credentials"
    __table_args__ = (
        Index("ix_auth_credentials_tenant_account", "tenant_id", "account_id"),
        Index("ix_auth_credentials_tenant_customer", "tenant_id", "customer_id"),
        # One live EMAIL_OTP per account; a passkey once per account.
        Index(
            "uq_auth_credentials_email_otp",
            "account_id",
            unique=True,
            sqlite_where=text("type = 'EMAIL_OTP' AND revoked_at IS NULL"),
            postgresql_where=text("type = 'EMAIL_OTP' AND revoked_at IS NULL"),
        ),
        Index(
            "uq_auth_credentials_passkey",
            "account_id",
            "passkey_credential_id",
            unique=True,
            sqlite_where=_LIVE,
            postgresql_where=_LIVE,
        ),
        check_in("status", CredentialStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    account_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("internal_accounts.id"))
    customer_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("customers.id"))
    type: Mapped[str] = mapped_column(String(16))  # EMAIL_OTP | OAUTH | PASSKEY
    status: Mapped[str] = mapped_column(String(16))  # wallets/state.py CredentialStatus
    nickname: Mapped[str] = mapped_column(String(320))  # the email, the OIDC email/subject, the passkey label
    oidc_issuer: Mapped[str | None] = mapped_column(String(512))
    oidc_audience: Mapped[str | None] = mapped_column(String(512))
    oidc_subject: Mapped[str | None] = mapped_column(String(512))
    passkey_credential_id: Mapped[str | None] = mapped_column(String(1400))  # base64url rawId
    passkey_public_key: Mapped[str | None] = mapped_column(Text)  # base64url COSE key
    passkey_sign_count: Mapped[int | None] = mapped_column(BigInteger)
    passkey_transports: Mapped[list[str] | None] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    verified_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class SessionRow(Base):
    """An authentication session: its API key is `public_key` (compressed SEC1 hex); the private key is the
    client's (EMAIL_OTP: its TEK) or was sealed to the client once and forgotten (OAUTH, PASSKEY, refresh)."""

    __tablename__ = "auth_sessions"
    __table_args__ = (
        Index("ix_auth_sessions_tenant_account", "tenant_id", "account_id"),
        Index("ix_auth_sessions_public_key", "public_key"),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    account_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("internal_accounts.id"))
    credential_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("auth_credentials.id"))
    public_key: Mapped[str] = mapped_column(String(66))
    refreshed_from: Mapped[str | None] = mapped_column(IdColumn())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class ChallengeRow(Base):
    """A pending challenge under a single-use requestId: a signed retry's (operation, resource, bound fields,
    allowed signers, payloadToSign) or a passkey ceremony's (registration or login)."""

    __tablename__ = "wallet_challenges"
    __table_args__ = (
        Index("ix_wallet_challenges_expires_at", "expires_at"),
        Index("ix_wallet_challenges_tenant_resource", "tenant_id", "resource_id"),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)  # Request:<uuid>
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    operation: Mapped[str] = mapped_column(String(64))
    resource_id: Mapped[str] = mapped_column(IdColumn())
    bound: Mapped[str] = mapped_column(Text)  # canonical JSON of the bound fields
    signers: Mapped[dict[str, Any]] = mapped_column(JsonType)
    context: Mapped[dict[str, Any]] = mapped_column(JsonType)  # the operation's own facts, handed back
    payload: Mapped[str] = mapped_column(Text)  # payloadToSign, or the WebAuthn challenge
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    consumed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class OtpRow(Base):
    """One OTP issuance of an EMAIL_OTP credential: the code as a keyed digest, the HPKE target key sealed.
    Only the newest unused issuance of a credential counts."""

    __tablename__ = "email_otps"
    __table_args__ = (Index("ix_email_otps_credential", "credential_id", "created_at"),)

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    credential_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("auth_credentials.id"))
    code_digest: Mapped[str] = mapped_column(String(64))
    target_key_sealed: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class EnclaveKeyRow(Base):
    """A tenant's P-256 key signing target bundles, verification tokens and production export bundles."""

    __tablename__ = "wallet_enclave_keys"

    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"), primary_key=True)
    private_key_sealed: Mapped[str] = mapped_column(Text)
    public_key: Mapped[str] = mapped_column(String(130))  # uncompressed SEC1 hex
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class AuditRow(Base):
    """Every state change of a wallet's credentials, sessions, privacy and custody, with who caused it."""

    __tablename__ = "wallet_audit_log"
    __table_args__ = (Index("ix_wallet_audit_log_tenant_account", "tenant_id", "account_id", "created_at"),)

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    account_id: Mapped[str] = mapped_column(IdColumn())
    action: Mapped[str] = mapped_column(String(48))
    subject_id: Mapped[str | None] = mapped_column(IdColumn())
    actor: Mapped[str] = mapped_column(String(80))  # the signing session's id, or "platform"
    details: Mapped[dict[str, Any]] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
