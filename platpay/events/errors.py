"""Events errors: each class carries its code and HTTP status."""

from __future__ import annotations

from platpay.errors import InvalidInput, NotFound


class WebhookEndpointNotSet(InvalidInput):
    code = "WEBHOOK_ENDPOINT_NOT_SET"


class WebhookDeliveryError(InvalidInput):
    code = "WEBHOOK_DELIVERY_ERROR"


class DeliveryNotFound(NotFound):
    code = "WEBHOOK_DELIVERY_NOT_FOUND"
