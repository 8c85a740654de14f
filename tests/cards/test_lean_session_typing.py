"""A card authorization's lean attempt runs in a `LeanTransaction` (no ORM session, PostgreSQL): every function
it is passed to says so, declaring a `LeanSession` (db/unit_of_work.py), never an `AsyncSession` it is not.
Read from the calls themselves: a profiler records each platpay function that receives the transaction."""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from platpay.db.lean import LeanTransaction
from tests.support.cards import active_card, approved_cardholder, funded_account, opening_body, simulate

pytestmark = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)

PLATPAY = str(Path(__file__).resolve().parents[2] / "platpay")


@pytest.fixture
def backend(request, pg_database):
    if pg_database is None:
        pytest.skip("a LeanTransaction exists on PostgreSQL only: set PLATPAY_TEST_DATABASE_URL")
    return request.param


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


async def test_every_function_given_a_lean_transaction_declares_a_lean_session(client, auth, runner) -> None:
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 1_000)
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    received: set[tuple[str, int, str, str]] = set()

    def profile(frame: FrameType, event: str, _: Any) -> None:
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(PLATPAY):
            return
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            if isinstance(frame.f_locals.get(name), LeanTransaction):
                received.add((code.co_filename, code.co_firstlineno, code.co_name, name))

    sys.setprofile(profile)
    try:
        approved = await simulate(client, auth, card["id"], "authorization", opening_body(600))
        declined = await simulate(client, auth, card["id"], "authorization", opening_body(5_000))
    finally:
        sys.setprofile(None)
    assert (approved.status_code, declined.status_code) == (202, 202), (approved.text, declined.text)
    assert received, "the authorization never ran in a LeanTransaction"
    wrong = sorted(
        f"{Path(filename).relative_to(PLATPAY)}:{line} {name}({parameter}: {annotation or '?'})"
        for filename, line, name, parameter in received
        if "LeanSession" not in (annotation := _annotation(filename, line, parameter)) and parameter != "self"
    )
    assert not wrong, "given a LeanTransaction, declared otherwise:\n" + "\n".join(wrong)
