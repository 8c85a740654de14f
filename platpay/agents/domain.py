"""Agents as the app discovers them: management, device codes, the Bearer credential (its resolver is
registered by me_endpoints), agent operations, approvals."""

from platpay.agents import audit_endpoints, dry_run_endpoints, endpoints, jobs, me_endpoints, models
from platpay.agents.state import ActionStatus
from platpay.kit.domain_spec import Domain, Mount

DOMAIN = Domain(
    name="agents",
    routers=(
        # /agents/me/... before /agents/{agentId}
        Mount(me_endpoints.router),
        Mount(dry_run_endpoints.router),
        Mount(endpoints.router),
        Mount(audit_endpoints.router),
    ),
    models=(models,),
    jobs=(jobs,),
    event_types=frozenset(f"AGENT_ACTION.{status}" for status in ActionStatus),
)
