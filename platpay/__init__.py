"""platpay: a self-hostable implementation of the Platform Payments Service API."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

API_VERSION = "2025-10-13"
BASE_PATH = f"/{API_VERSION}"


@cache
def package_version() -> str:
    """platpay's own version: one source, the installed package's metadata (pyproject.toml's `version`),
    shown by `platpay --version`, /healthz, the OpenAPI document's `info` and the MCP server's
    `serverInfo`. `0+unknown` when platpay runs from a tree that was never installed."""
    try:
        return version("platpay")
    except PackageNotFoundError:
        return "0+unknown"
