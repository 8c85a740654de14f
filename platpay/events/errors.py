"""Events errors: each class carries its code and HTTP status."""

from __future__ import annotations

from platpay.errors import InvalidInput, ResourceNotFound


class WebhookEndpointNotSet(InvalidInput):
    code = "WEBHOOK_ENDPOINT_NOT_SET"


class WebhookDeliveryError(InvalidInput):
    code = "WEBHOOK_DELIVERY_ERROR"


class DeliveryNotFound(ResourceNotFound):
    code = "WEBHOOK_DELIVERY_NOT_FOUND"
    resource, id_key = "webhook delivery", "deliveryId"
