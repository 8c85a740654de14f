"""platpay: a self-hostable implementation of the Platform Payments Service API."""

API_VERSION = "2025-10-13"
BASE_PATH = f"/{API_VERSION}"
