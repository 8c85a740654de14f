"""Webhook endpoint URLs: what we accept, and the SSRF guard an operator can switch on for production."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

from platpay.errors import FieldConstraint, invalid_field

URL: FieldConstraint = {"format": "url"}


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def validate_webhook_url(url: str, *, field: str, require_public_https: bool) -> str:
    """http(s) URL with a host; loopback is fine for sandboxes unless public https is required."""
    if any(ch.isspace() for ch in url) or not url.isprintable():
        raise invalid_field(field, "must be a URL without spaces or control characters", constraint=URL)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise invalid_field(field, f"not a valid URL: {error}", constraint=URL) from None
    if parts.scheme not in ("http", "https"):
        raise invalid_field(
            field, f"scheme must be http or https, got {parts.scheme or 'none'!r}", constraint=URL
        )
    if not parts.hostname:
        raise invalid_field(field, "URL has no host", constraint=URL)
    if parts.username is not None or parts.password is not None:
        raise invalid_field(field, "credentials in the URL are not accepted; verify X-Svc-Signature instead")
    if parts.fragment:
        raise invalid_field(field, "URL must not have a #fragment")
    if port == 0:
        raise invalid_field(field, "port 0 is not a valid port")
    if require_public_https:
        if parts.scheme != "https":
            raise invalid_field(field, "production webhooks must use https")
        host = parts.hostname.lower()
        address = _ip(host)
        if (
            host == "localhost"
            or host.endswith(".localhost")
            or (address is not None and not address.is_global)
        ):
            raise invalid_field(field, "production webhooks must point to a public address")
    return url


async def resolves_to_public(host: str) -> bool:
    """True only if every address `host` resolves to is globally routable (checked at each delivery)."""
    address = _ip(host)
    if address is not None:
        return address.is_global
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    addresses = {_ip(str(info[4][0])) for info in infos}
    return bool(addresses) and all(a is not None and a.is_global for a in addresses)
