"""The baseline: a bare Starlette app answering GET /2025-10-13/config with a fixed JSON document.

It serializes the same document on every request (JSONResponse), as an app returning that JSON would, and
runs under uvicorn with the options `platpay serve` uses (one process, uvloop + httptools when installed,
no access log), or under granian (`--server granian`, one worker, bench/http_servers.py). No auth, no
database: the ceiling for "an ASGI app returning this JSON" on this machine.

    python bench/bare_app.py --port 8001 --json config.json
    python bench/bare_app.py --port 8001 --json config.json --server granian --loop asyncio
"""

from __future__ import annotations

import argparse
import json
import os
import sys
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


def from_environment() -> Starlette:
    """granian's factory: the document named by BARE_APP_JSON."""
    return build(json.loads(Path(os.environ["BARE_APP_JSON"]).read_text("utf-8")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json", type=Path, required=True, help="file holding the JSON body to return")
    parser.add_argument("--server", choices=["uvicorn", "granian"], default="uvicorn")
    parser.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto")
    args = parser.parse_args()
    if args.server == "granian":
        from granian import Granian
        from granian.constants import Interfaces

        os.environ["BARE_APP_JSON"] = str(args.json.resolve())
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH")])
        )
        Granian(
            "bare_app:from_environment",
            address=args.host,
            port=args.port,
            interface=Interfaces.ASGI,
            workers=1,
            loop=args.loop,
            factory=True,
            log_level="warning",  # type: ignore[arg-type]
        ).serve()
        return
    document = json.loads(args.json.read_text("utf-8"))
    uvicorn.run(
        build(document), host=args.host, port=args.port, access_log=False, log_level="warning", loop=args.loop
    )


if __name__ == "__main__":
    main()
