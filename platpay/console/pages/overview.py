"""The console's overview: what the platform holds, what moved, how its webhooks fare, what waits for a
person."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from platpay.console import web

router = web.console_router()


@router.get("")
async def overview(request: Request, console: web.Console = web.SignedIn) -> Response:
    return web.render(console, "overview.html", request=request, title="Overview")
