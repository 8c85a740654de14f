"""Sandbox magic values (docs/sandbox.md) that several test modules use."""

from __future__ import annotations

# The scripted sandbox UMA counterparty that always succeeds, in USD.
SUCCESS_USD = "$success.usd@sandbox.uma.money"
