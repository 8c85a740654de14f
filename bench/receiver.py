"""A fast local webhook receiver for the benchmarks: a raw ASGI app under uvicorn (uvloop + httptools).

Every POST is read to the end and answered 200 `{"ok":true}`; GET /count answers the number of POSTs so
far. It does no verification: it stands in for a receiver that is never the bottleneck (`jobs_throughput.py`
measures it alone first to show that).

    python bench/receiver.py --port 8002
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import uvicorn

_OK = b'{"ok":true}'
_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(_OK)).encode())]


class Receiver:
    def __init__(self) -> None:
        self.count = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        if scope["method"] == "POST":
            self.count += 1
            body, headers = _OK, _HEADERS
        else:
            body = json.dumps({"count": self.count}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(Receiver(), host=args.host, port=args.port, access_log=False, log_level="warning")


if __name__ == "__main__":
    main()
