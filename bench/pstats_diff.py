"""Two cProfile dumps side by side, per function: calls and own time per request in each, sorted by the
difference in calls. Shows what one request path does that another does not (an agent's transfer-out
against the platform's, a commit against its parent).

    .venv/bin/python bench/money_inprocess.py --backends postgres --rounds 1 --dump-stats /tmp/prof
    .venv/bin/python bench/pstats_diff.py /tmp/prof/postgres-platform.pstats /tmp/prof/postgres-agent.pstats \\
        --requests 600 [--top 40] [--by time]
"""

from __future__ import annotations

import argparse
import pstats
from typing import Any


def _per_function(path: str) -> dict[str, tuple[int, float]]:
    stats: Any = pstats.Stats(path)
    table: dict[str, tuple[int, float]] = {}
    for (filename, line, name), (_cc, calls, own, _cumulative, _callers) in stats.stats.items():
        short = filename.split("site-packages/")[-1].split("/platpay/")[-1]
        key = f"{short}:{line}({name})"
        before = table.get(key, (0, 0.0))
        table[key] = (before[0] + calls, before[1] + own)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--requests", type=int, default=600, help="requests each dump holds")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--by", choices=["calls", "time"], default="calls")
    args = parser.parse_args()
    first, second = _per_function(args.first), _per_function(args.second)
    n = args.requests
    rows: list[tuple[str, float, float, float, float]] = []
    for key in first.keys() | second.keys():
        a_calls, a_own = first.get(key, (0, 0.0))
        b_calls, b_own = second.get(key, (0, 0.0))
        rows.append((key, a_calls / n, b_calls / n, a_own / n * 1e6, b_own / n * 1e6))

    def difference(row: tuple[str, float, float, float, float]) -> float:
        return abs(row[2] - row[1]) if args.by == "calls" else abs(row[4] - row[3])

    rows.sort(key=difference, reverse=True)
    totals: list[float] = [sum(row[1] for row in rows), sum(row[2] for row in rows)]
    totals += [sum(row[3] for row in rows), sum(row[4] for row in rows)]
    print(f"{'calls/req':>19}  {'own µs/req':>17}  function")
    print(f"{totals[0]:8.1f} {totals[1]:8.1f}   {totals[2]:7.0f} {totals[3]:7.0f}   (all)")
    for name, calls_1, calls_2, own_1, own_2 in rows[: args.top]:
        print(f"{calls_1:8.1f} {calls_2:8.1f}   {own_1:7.1f} {own_2:7.1f}   {name}")


if __name__ == "__main__":
    main()
