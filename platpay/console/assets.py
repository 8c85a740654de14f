"""The console's stylesheet and script, served from the package (no asset from the network)."""

from __future__ import annotations

from pathlib import Path

from fastapi.responses import Response

from platpay.console import web
from platpay.errors import NotFound

router = web.console_router()
_STATIC = Path(__file__).parent / "static"
_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
_FILES = {
    path.name: (path.read_bytes(), _TYPES[path.suffix]) for path in _STATIC.iterdir() if path.suffix in _TYPES
}


@router.get("/static/{name}")
async def static_file(name: str) -> Response:
    found = _FILES.get(name)
    if found is None:
        raise NotFound(f"no console file {name!r}")
    body, media_type = found
    return Response(body, media_type=media_type, headers={"Cache-Control": "public, max-age=3600"})
