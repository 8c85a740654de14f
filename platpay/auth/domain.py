"""API tokens (and the console's sessions and trail, auth/sessions/) as the app discovers them."""

from platpay.auth import endpoints, models
from platpay.auth.sessions import models as session_models
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(name="auth", routers=(Mount(endpoints.router),), models=(models, session_models))
