"""Per-tenant webhook signing keys, unsealed once per process (key material never changes)."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.kit.crypto import p256
from platpay.kit.crypto.sealing import get_sealer
from platpay.kit.crypto.webhook_signing import SEAL_PURPOSE
from platpay.tenants import service as tenants_service

_keys: dict[str, ec.EllipticCurvePrivateKey] = {}


async def signing_key(
    session: AsyncSession, *, tenant_id: str, settings: Settings
) -> ec.EllipticCurvePrivateKey:
    key = _keys.get(tenant_id)
    if key is None:
        sealed = await tenants_service.sealed_webhook_key(session, tenant_id=tenant_id)
        pem = get_sealer(settings.master_key, settings.var_dir).open(sealed, purpose=SEAL_PURPOSE)
        key = _keys[tenant_id] = p256.private_key_from_pem(pem)
    return key
