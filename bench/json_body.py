"""What parsing a request body through kit/json_body.py costs beside the `json.loads(bytes)` FastAPI would
use: a typical POST /transfer-out body, a larger customer body, and a body with many small objects (the
duplicate-key check's `object_pairs_hook` runs once per object). Prints CPU microseconds per parse
(the best of --repeat runs); no assertion (bench/README.md).

    .venv/bin/python bench/json_body.py [--number 200000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import functools
import json
import time
import timeit

from platpay.kit import json_body

CPU = time.process_time  # this process's CPU time: steadier than wall time on a shared machine
BODIES = {
    "transfer-out": {
        "source": {"accountId": "InternalAccount:019542f5-b3e7-1d02-0000-000000000002"},
        "destination": {"accountId": "ExternalAccount:019542f5-b3e7-1d02-0000-000000000003"},
        "amount": 12_550,
        "description": "Invoice 2025-10-13",
    },
    "customer": {
        "customerType": "INDIVIDUAL",
        "platformCustomerId": "cust-7781",
        "fullName": "Jane Doe",
        "birthDate": "1990-04-12",
        "email": "jane@example.com",
        "currencies": ["USD", "MXN", "USDB"],
        "address": {"line1": "1 Main St", "city": "Springfield", "postalCode": "62701", "country": "US"},
    },
    "100 objects": {"items": [{"id": i, "amount": i * 100} for i in range(100)]},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'body':<14}{'bytes':>7}{'json.loads µs':>16}{'json_body µs':>15}{'extra µs':>10}{'ratio':>8}")
    for name, value in BODIES.items():
        raw = json.dumps(value).encode()
        number = max(1, args.number // max(1, len(raw) // 150))
        plain = (
            min(
                timeit.repeat(
                    functools.partial(json.loads, raw), number=number, repeat=args.repeat, timer=CPU
                )
            )
            / number
        )
        ours = (
            min(
                timeit.repeat(
                    functools.partial(json_body.parse, raw), number=number, repeat=args.repeat, timer=CPU
                )
            )
            / number
        )
        print(
            f"{name:<14}{len(raw):>7}{plain * 1e6:>16.2f}{ours * 1e6:>15.2f}"
            f"{(ours - plain) * 1e6:>10.2f}{ours / plain:>8.2f}"
        )


if __name__ == "__main__":
    main()
