"""Which platpay functions a `LeanTransaction` is passed to, read from the calls themselves (a profiler records
each platpay function that receives one), and which of them do not declare a `LeanSession`
(db/unit_of_work.py). Used by the lean paths' typing tests (cards, wallets)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from platpay.db.lean import LeanTransaction

# A lean path's typing test runs where its path takes a LeanTransaction: `pytestmark = ON_BOTH` (transfers,
# card authorizations, agents' money requests) or `ON_POSTGRESQL` (wallet logins: an ORM session on SQLite),
# with `from tests.support.lean_typing import backend` in its module.
ON_POSTGRESQL = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
ON_BOTH = pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def backend(request: Any, pg_database: Any) -> str:
    if request.param == "postgresql" and pg_database is None:
        pytest.skip("PostgreSQL: set PLATPAY_TEST_DATABASE_URL")
    return str(request.param)


PLATPAY = str(Path(__file__).resolve().parents[2] / "platpay")

Received = set[tuple[str, int, str, str]]  # (file, first line, function, parameter)


@contextmanager
def lean_receivers() -> Iterator[Received]:
    """While inside: every call of a platpay function with a LeanTransaction argument, recorded."""
    received: Received = set()

    def profile(frame: FrameType, event: str, _: Any) -> None:
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(PLATPAY):
            return
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            if isinstance(frame.f_locals.get(name), LeanTransaction):
                received.add((code.co_filename, code.co_firstlineno, code.co_name, name))

    sys.setprofile(profile)
    try:
        yield received
    finally:
        sys.setprofile(None)


def misdeclared(received: Received) -> list[str]:
    """The receivers whose parameter is not declared a LeanSession, as `file:line function(parameter: type)`."""
    return sorted(
        f"{Path(filename).relative_to(PLATPAY)}:{line} {name}({parameter}: {annotation or '?'})"
        for filename, line, name, parameter in received
        if "LeanSession" not in (annotation := _annotation(filename, line, parameter)) and parameter != "self"
    )


@cache
def _functions(filename: str) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions of a module by the first line of their code object (the first decorator's, if any)."""
    found: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.walk(ast.parse(Path(filename).read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[min([node.lineno, *(d.lineno for d in node.decorator_list)])] = node
    return found


def _annotation(filename: str, line: int, parameter: str) -> str:
    function = _functions(filename)[line]
    arguments = function.args
    for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if argument.arg == parameter:
            return ast.unparse(argument.annotation) if argument.annotation else ""
    raise AssertionError(f"{filename}:{line} has no parameter {parameter}")
