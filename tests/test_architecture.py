"""The layering of docs/architecture.md, read from the code: every import between platpay packages goes
down the list of layers (so the packages form a DAG), and no platpay import hides inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from platpay import domains
from platpay.errors import ApiError

ROOT = Path(__file__).resolve().parent.parent / "platpay"

# docs/architecture.md, top to bottom: a package may import only packages before it in this list.
LAYERS = (
    ("kit", "config", "errors", "logging", "metrics", "db"),
    ("jobs",),
    ("clocks",),
    ("tenants",),
    ("auth",),
    ("events",),
    ("messages",),
    ("ledger",),
    ("customers",),
    ("accounts",),
    ("wallets",),
    ("fx",),
    ("payments",),
    ("cards",),
    ("onboarding",),
    ("invitations",),
    ("agents",),
    ("platforms",),
    ("sandbox",),
    ("mcp",),
    ("app", "cli", "__main__", "middleware", "domains", "testing", "migrations"),
)
FOUNDATION = frozenset(LAYERS[0])
TOP = frozenset(LAYERS[-1])
SHARED = (FOUNDATION, TOP)  # layers whose packages may import each other (never in a cycle)

# Imports inside functions that are there on purpose (module path relative to platpay/, imported module).
IN_FUNCTION_ALLOWED = {
    # The CLI imports what each command needs when it runs, so `platpay --help` starts fast.
    ("cli.py", "*"),
}


def _package(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _rank(package: str) -> int:
    for index, layer in enumerate(LAYERS):
        if package in layer:
            return index
    raise AssertionError(f"platpay/{package} is in no layer of tests/test_architecture.py LAYERS")


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported platpay package, line, inside a function) for every platpay import of the module."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            modules: list[str] = []
            if isinstance(child, ast.Import):
                modules = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    modules = ["platpay." + _package(path)]
                elif child.module == "platpay":
                    modules = [f"platpay.{alias.name}" for alias in child.names]
                elif child.module:
                    modules = [child.module]
            for module in modules:
                parts = module.split(".")
                if parts[0] != "platpay" or len(parts) < 2:
                    continue
                if (ROOT / parts[1]).is_dir() or (ROOT / f"{parts[1]}.py").exists():
                    found.append((parts[1], child.lineno, in_function))
            visit(child, inside)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


MODULES = sorted(p for p in ROOT.rglob("*.py"))


def test_every_package_is_in_a_layer() -> None:
    for path in MODULES:
        if path.parent == ROOT and path.stem == "__init__":
            continue
        _rank(_package(path))


def test_imports_go_down_the_layers() -> None:
    wrong = []
    for path in MODULES:
        if path.parent == ROOT and path.stem == "__init__":
            continue
        package = _package(path)
        for target, line, _ in _imports(path):
            if target == package or any(package in layer and target in layer for layer in SHARED):
                continue
            if _rank(target) >= _rank(package):
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports platpay.{target}")
    assert not wrong, "imports against docs/architecture.md's layers:\n" + "\n".join(wrong)


@pytest.mark.parametrize("layer", SHARED, ids=("foundation", "top"))
def test_packages_of_one_layer_do_not_import_in_a_cycle(layer: frozenset[str]) -> None:
    edges: dict[str, set[str]] = {name: set() for name in layer}
    for path in MODULES:
        package = _package(path)
        if package in layer:
            edges[package] |= {t for t, _, _ in _imports(path) if t in layer and t != package}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in edges[start])

    cyclic = sorted(name for name in layer if reaches(name, name, {name}))
    assert not cyclic, f"packages of one layer importing each other in a cycle: {cyclic}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_platpay_import_inside_a_function(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    if (rel, "*") in IN_FUNCTION_ALLOWED:
        return
    hidden = [line for target, line, inside in _imports(path) if inside]
    assert not hidden, f"platpay/{rel} imports platpay modules inside functions, lines {hidden}"


# Errors outside the domains: the generic ones, and those of foundation pieces that are not domains.
_FOUNDATION_ERROR_MODULES = {"platpay.errors", "platpay.kit.idempotency", "platpay.db.faults"}


def test_every_error_lives_in_its_domains_errors_module() -> None:
    """Each domain's errors are classes in its `errors.py`, each carrying its code and status."""
    domains.load()
    seen, stack = [], [ApiError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    misplaced = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in seen
        if cls.__module__.startswith("platpay.")
        and cls.__module__ not in _FOUNDATION_ERROR_MODULES
        and not cls.__module__.endswith(".errors")
    )
    assert not misplaced, f"errors defined outside a domain's errors.py: {misplaced}"
    for cls in seen:
        assert isinstance(cls.status, int) and isinstance(cls.code, str), cls


def _table_imports(path: Path) -> list[tuple[str, int]]:
    """(models module, line) of every import of a `models` / `*_models` module, outside TYPE_CHECKING blocks."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            guarded = type_only or (
                isinstance(child, ast.If)
                and isinstance(child.test, ast.Name)
                and child.test.id == "TYPE_CHECKING"
            )
            if isinstance(child, ast.ImportFrom) and child.module and not guarded:
                last = child.module.rsplit(".", 1)[-1]
                if child.module.startswith("platpay.") and (last == "models" or last.endswith("_models")):
                    found.append((child.module, child.lineno))
            visit(child, guarded)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_a_domain_owns_its_tables() -> None:
    """Only a domain's own modules import its table classes (a row type another domain's service returns may
    be named under TYPE_CHECKING); everything else reads and writes through that domain's service."""
    wrong = []
    for path in MODULES:
        package = _package(path)
        for module, line in _table_imports(path):
            if module.split(".")[1] != package:
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports {module}")
    assert not wrong, "tables used outside their domain:\n" + "\n".join(wrong)


# docs/architecture.md "The fast path": lean statements (db/lean.py) only in these modules, each the owner of
# the tables its lean statements touch; a new one needs a benchmark showing it matters (bench/README.md).
LEAN_MODULES = {
    "db/lean.py",
    "db/database.py",  # authentication's one read per request (Database.fetch_first)
    "db/portable.py",  # lean spellings of portable statements, for the modules below
    "kit/idempotency.py",
    "jobs/repository.py",
    "auth/repository.py",
    "events/repository.py",
    "ledger/repository.py",
    "customers/repository.py",  # the owner's columns and row in the transfer path's one read
    "accounts/repository.py",  # the transfer path's one read
    "payments/repository.py",
    "agents/repository.py",  # an agent's bearer token: one read per request, like auth's
    "cards/repository.py",  # an authorization's card read (FOR UPDATE, with its sources) and its INSERT
    "wallets/repository.py",  # an EMAIL_OTP login's statements (the target: >= 100 logins/s)
    "kit/rate_limits.py",  # the limits' one upsert (every wallet challenge and verify counts)
    "messages/repository.py",  # queueing and sending a message (an OTP email per login challenge)
}


def test_lean_statements_only_where_the_fast_path_says() -> None:
    users = set()
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (
                node.module == "platpay.db.lean"
                or (node.module == "platpay.db" and any(alias.name == "lean" for alias in node.names))
            ):
                users.add(str(path.relative_to(ROOT)))
    assert users - {"db/lean.py"} <= LEAN_MODULES, (
        f"lean statements outside the fast path: {users - LEAN_MODULES}"
    )
    assert LEAN_MODULES - {"db/lean.py"} <= users, (
        f"listed but no longer lean: {LEAN_MODULES - users - {'db/lean.py'}}"
    )
