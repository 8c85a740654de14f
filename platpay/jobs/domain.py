"""The jobs package as the app discovers it: its table, the built-in no-op job, and the idempotency-key and
rate-limit counter tables, whose expired rows the runner purges."""

from platpay.jobs import builtin, models
from platpay.kit import idempotency, rate_limits
from platpay.kit.domain_spec import Domain

DOMAIN = Domain(name="jobs", models=(models, idempotency, rate_limits), jobs=(builtin,))
