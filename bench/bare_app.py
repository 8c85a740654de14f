"""The baseline: a bare Starlette app answering GET /2025-10-13/config with a fixed JSON document.

It serializes the same document on every request (JSONResponse), as an app returning that JSON would, and
runs under uvicorn with the options `platpay serve` uses (one process, uvloop + httptools when installed,
no access log). No auth, no database: the ceiling for "an ASGI app returning this JSON" on this machine.

    python bench/bare_app.py --port 8001 --json config.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def build(document: Any) -> Starlette:
    async def config(_request: Request) -> JSONResponse:
        return JSONResponse(document)

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route("/2025-10-13/config", config), Route("/healthz", healthz)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json", type=Path, required=True, help="file holding the JSON body to return")
    args = parser.parse_args()
    document = json.loads(args.json.read_text("utf-8"))
    uvicorn.run(build(document), host=args.host, port=args.port, access_log=False, log_level="warning")


if __name__ == "__main__":
    main()
