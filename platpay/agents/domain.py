"""Agents as the app discovers them: management, device codes, the Bearer credential (its resolver is
registered by me/endpoints.py), agent operations, approvals."""

from platpay.agents import endpoints, jobs, models
from platpay.agents.audit import endpoints as audit_endpoints
from platpay.agents.dry_run import endpoints as dry_run_endpoints
from platpay.agents.me import endpoints as me_endpoints
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
