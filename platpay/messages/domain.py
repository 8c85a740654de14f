"""Outbound messages as the app discovers them: the messages table, the send job, GET /sandbox/mailbox."""

from platpay.kit.domain_spec import Domain, Mount
from platpay.messages import endpoints, jobs, models, providers, sandbox, smtp

DOMAIN = Domain(
    name="messages",
    routers=(Mount(endpoints.sandbox_router),),
    models=(models,),
    jobs=(jobs,),
    providers=(providers, smtp, sandbox),
)
