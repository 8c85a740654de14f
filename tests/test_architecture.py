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
    ("loops", "kit", "config", "errors", "logging", "metrics", "db"),
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
    ("console",),
    ("app", "cli", "__main__", "middleware", "domains", "testing", "migrations", "serving"),
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
    "db/watch.py",  # keyed lean reads kept while notified of changes (the credentials of auth and agents)
    "kit/idempotency.py",
    "jobs/repository.py",
    "auth/repository.py",
    "auth/sessions/repository.py",  # every console page's session read (with its token and tenant)
    "events/repository.py",
    "ledger/repository.py",
    "customers/repository.py",  # the owner's columns and row in the transfer path's one read
    "accounts/repository.py",  # the transfer path's one read
    "payments/repository.py",
    "agents/repository.py",  # an agent's bearer token: one read per request, like auth's
    "cards/repository.py",  # an authorization's card read (with its sources) and its INSERT
    "wallets/repository.py",  # an EMAIL_OTP login's statements (the target: >= 200 logins/s)
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


# docs/architecture.md "A domain's front door": of another domain (or of one of its sub-domains, a
# sub-package in the same shape: payments/quotes/) a domain imports only these modules.
FRONT_DOOR = frozenset({"service", "types", "errors", "state", "hooks", "schemas"})
# Front doors named otherwise, each its domain's answer for everyone (docs/architecture.md).
OTHER_FRONT_DOORS = {
    "auth.principal",  # the Principal every endpoint takes
    "auth.principals",  # the authentication dependencies, and the resolver registry of principal kinds
    "tenants.context",  # TenantContext: what a request knows of its tenant
}
# Packages that are not domains with one front door: the foundation and the jobs kit (jobs/registry.py).
NOT_DOMAINS = FOUNDATION | {"jobs"}
# The importers that are not domains: wiring, the migrations, the MCP client (request/response models).
NOT_CALLERS = TOP | {"mcp"}
# Known reaches past a front door: (importing domain, imported module), each with its reason. Only shrinks.
BACK_DOORS = {
    # Pure validators: account numbers and corridors, shared with payments' checks of the same rules.
    ("payments", "accounts.validators.corridors"),
    ("payments", "accounts.validators.bitcoin"),
    ("payments", "accounts.validators.lightning"),
    ("payments", "accounts.validators.wallets"),
    ("fx", "accounts.validators.corridor_specs"),
    ("payments", "accounts.instructions"),  # a quote's payment instructions are an internal account's
    ("cards", "payments.card_schemas"),  # card transactions are documented among payments' transactions
    ("cards", "wallets.signed.endpoints"),  # the FastAPI dependency of a signed operation (PATCH /cards/{id})
    ("agents", "payments.quotes.endpoints"),  # an agent's POST /quotes parses the body as the platform's
    ("agents", "payments.transfers"),  # an agent's transfer is planned, approved, then started
}


def _imported_modules(path: Path) -> list[tuple[str, int]]:
    """(module relative to platpay, line) of every platpay module imported, outside TYPE_CHECKING blocks."""
    found: list[tuple[str, int]] = []

    def is_module(dotted: str) -> bool:
        target = ROOT.joinpath(*dotted.split("."))
        return target.is_dir() or target.with_suffix(".py").exists()

    def visit(node: ast.AST, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            guarded = type_only or (
                isinstance(child, ast.If)
                and isinstance(child.test, ast.Name)
                and child.test.id == "TYPE_CHECKING"
            )
            if not guarded and isinstance(child, ast.ImportFrom) and not child.level and child.module:
                if child.module.startswith("platpay."):
                    base = child.module.removeprefix("platpay.")
                    for alias in child.names:
                        module = f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base
                        found.append((module, child.lineno))
            elif not guarded and isinstance(child, ast.Import):
                found.extend(
                    (alias.name.removeprefix("platpay."), child.lineno)
                    for alias in child.names
                    if alias.name.startswith("platpay.")
                )
            visit(child, guarded)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _through_the_front_door(module: str) -> bool:
    if module in OTHER_FRONT_DOORS:
        return True
    parts = module.split(".")
    if len(parts) < 2 or parts[-1] not in FRONT_DOOR:
        return False
    # Every part between the domain and the front door module is a sub-domain (a sub-package).
    return all(ROOT.joinpath(*parts[:i]).is_dir() for i in range(2, len(parts)))


def test_other_domains_come_in_through_the_front_door() -> None:
    """A domain reaches another only through its service (and the types, errors, states, hooks and API
    schemas it declares), or a sub-domain's: never into the modules that do the work behind it."""
    wrong, used = [], set()
    for path in MODULES:
        package = _package(path)
        if package in NOT_CALLERS or package in NOT_DOMAINS:
            continue
        for module, line in _imported_modules(path):
            target = module.split(".")[0]
            if target == package or target in NOT_DOMAINS or _through_the_front_door(module):
                continue
            if (package, module) in BACK_DOORS:
                used.add((package, module))
                continue
            wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports platpay.{module}")
    assert not wrong, "imports past another domain's front door:\n" + "\n".join(wrong)
    assert not BACK_DOORS - used, f"back doors no longer used (remove them): {sorted(BACK_DOORS - used)}"


def _status_enums() -> dict[str, type]:
    """Every status enum: the StrEnums named *Status or *State in the domains' state.py modules."""
    import importlib
    from enum import StrEnum

    enums: dict[str, type] = {}
    for path in sorted(ROOT.rglob("state.py")):
        module = importlib.import_module("platpay." + ".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, StrEnum)
                and value.__module__ == module.__name__
                and name.endswith(("Status", "State"))
            ):
                enums[f"{module.__name__}.{name}"] = value
    return enums


def _names_a_status(name: str) -> bool:
    lowered = name.lower()
    return (
        lowered in ("status", "state") or lowered.endswith(("_status", "_state")) or name.endswith("Status")
    )


def _status_literals(tree: ast.AST, values: frozenset[str]) -> list[ast.Constant]:
    """String constants equal to a status value where a status is compared or given: either side of a
    comparison (`row.status == "ACTIVE"`, `status in ("A", "B")`), `.in_(...)`/`.not_in(...)` arguments, a
    keyword argument or an assignment target named status/state/*_status/*_state, a dict value under such a
    key (`{"status": "OPEN"}`)."""

    def constants(node: ast.AST | None) -> list[ast.Constant]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values:
            return [node]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return [found for element in node.elts for found in constants(element)]
        if isinstance(node, ast.IfExp):
            return constants(node.body) + constants(node.orelse)
        return []

    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += constants(side)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("in_", "not_in", "notin_"):
                for argument in node.args:
                    found += constants(argument)
            for keyword in node.keywords:
                if keyword.arg is not None and _names_a_status(keyword.arg):
                    found += constants(keyword.value)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                elements = target.elts if isinstance(target, ast.Tuple) else [target]
                assigned = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for element, value in zip(elements, assigned, strict=False):
                    if isinstance(element, ast.Attribute):
                        name = element.attr
                    elif isinstance(element, ast.Name):
                        name = element.id
                    elif isinstance(element, ast.Subscript) and isinstance(element.slice, ast.Constant):
                        name = str(element.slice.value)
                    else:
                        continue
                    if _names_a_status(name):
                        found += constants(value)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and _names_a_status(key.value)
                ):
                    found += constants(value)
    return found


# Modules that may spell a status out: the enums themselves, the API's schemas (Literal types the OpenAPI
# document is generated from) and the migrations (each freezes the values of its own revision).
_STATUS_SPELLED_OUT = ("state.py", "schemas.py")


def test_statuses_are_enum_members_outside_state_and_schemas() -> None:
    """A status compared or written as a raw string drifts from its enum (a typo is a silent mismatch):
    outside state.py and schemas.py every one is a member of its StrEnum."""
    values = frozenset(member.value for enum in _status_enums().values() for member in enum)  # type: ignore[attr-defined]
    assert {"ACTIVE", "OPEN", "QUEUED", "PENDING_APPROVAL"} <= values
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if path.name.endswith(_STATUS_SPELLED_OUT) or relative.parts[0] == "migrations":
            continue
        offenders += [
            f"platpay/{relative}:{constant.lineno}: {constant.value!r}"
            for constant in _status_literals(ast.parse(path.read_text()), values)
        ]
    assert offenders == [], "use the status enum's member (<domain>/state.py):\n" + "\n".join(offenders)


def test_the_status_literal_check_catches_what_it_should() -> None:
    values = frozenset({"ACTIVE", "OPEN"})
    caught = """
if account.status != "ACTIVE": pass
ok = status in ("ACTIVE", "X")
row.state = "OPEN"
values = {"status": "OPEN", "kind": "ACTIVE"}
update(values, kyc_status="ACTIVE")
query.where(Row.status.in_(["OPEN"]))
"""
    assert sorted(c.lineno for c in _status_literals(ast.parse(caught), values)) == [2, 3, 4, 5, 6, 7]
    ignored = 'label = "ACTIVE"\nlog("ACTIVE")\nvalues = {"kind": "OPEN"}\n'
    assert _status_literals(ast.parse(ignored), values) == []


def _signatures(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module's functions and its classes' methods (not the closures inside them)."""
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            found += [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return found


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


# Where a unit of work is run (a lean transaction or an ORM one): the runners of `LeanFirst` operations.
UNIT_OF_WORK_RUNNERS = {"kit/idempotency.py", "jobs/runner.py"}
PERFORMANCE_FLAGS = {"lean", "balance_last", "balances_last", "fast", "fast_path"}


def test_no_performance_parameters_in_service_signatures() -> None:
    """docs/architecture.md "The fast path": which transaction an operation runs in is its runner's business
    (a `LeanFirst`, db/unit_of_work.py), and the ledger's statement order has one name, `BalanceOrder`, taken
    only by the ledger's own functions; no domain function takes a lean or statement-order flag, and no
    public function outside the ledger takes a `BalanceOrder`."""
    wrong = []
    for path in MODULES:
        rel = str(path.relative_to(ROOT))
        if rel.startswith("db/") or rel in UNIT_OF_WORK_RUNNERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):  # closures too: an endpoint's `run(balance_last)` is one
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                wrong += [
                    f"{rel}:{node.lineno} {node.name}({parameter.arg})"
                    for parameter in _parameters(node)
                    if parameter.arg in PERFORMANCE_FLAGS
                ]
        for function in _signatures(tree):
            if function.name.startswith("_") or rel.startswith("ledger/"):
                continue
            for parameter in _parameters(function):
                annotation = ast.unparse(parameter.annotation) if parameter.annotation else ""
                if "BalanceOrder" in annotation:
                    wrong.append(f"{rel}:{function.lineno} {function.name}({parameter.arg}: {annotation})")
    assert not wrong, "performance parameters in service signatures:\n" + "\n".join(wrong)


def test_only_the_unit_of_work_runners_retry_a_race() -> None:
    """A `LeanFirst`'s race (`Raced`, db/unit_of_work.py) is caught and retried by its runner only (the
    idempotent runner, `JobContext.run`): no endpoint, job or service catches one to run again."""
    wrong = []
    for path in MODULES:
        rel = str(path.relative_to(ROOT))
        if rel.startswith("db/") or rel in UNIT_OF_WORK_RUNNERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                caught = ast.unparse(node.type)
                if "Raced" in caught:
                    wrong.append(f"{rel}:{node.lineno} except {caught}")
    assert not wrong, "a race retried outside the unit of work's runners:\n" + "\n".join(wrong)


def _public_lean_statements() -> set[str]:
    """Names of the module-level `Lean(...)` statements a repository does not mark private."""
    names = set()
    for path in MODULES:
        if path.stem != "repository":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "Lean"
            ):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name) and not t.id.startswith("_")}
    return names


def test_repository_statements_run_only_in_their_repository() -> None:
    """A statement is run by the repository that holds it (a function named for what it reads): no module
    outside a repository runs one with `Database.fetch_first` (an autocommit read) or names one."""
    statements = _public_lean_statements()
    wrong = []
    for path in MODULES:
        rel = str(path.relative_to(ROOT))
        if path.stem == "repository" or rel.startswith("db/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "fetch_first"
            ):
                wrong.append(f"{rel}:{node.lineno} calls fetch_first")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr in statements
                and isinstance(node.value, ast.Name)
                and node.value.id.endswith("repository")
            ):
                wrong.append(f"{rel}:{node.lineno} names {node.value.id}.{node.attr}")
    assert not wrong, "repository statements run outside their repository:\n" + "\n".join(wrong)


def test_routes_are_tried_by_specificity_not_by_numbers() -> None:
    """A domain lists its routers; the app tries their routes by specificity (kit/routing.py `by_specificity`,
    tests/kit/test_route_order.py), so no domain.py orders them with numbers coordinated across domains."""
    wrong = []
    for path in MODULES:
        if path.name != "domain.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and any(k.arg == "order" for k in node.keywords):
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not wrong, "routers given a numeric order:\n" + "\n".join(wrong)


def _by_id_lookups(tree: ast.Module) -> list[int]:
    """Lines of `select(Row)....where(Row.id == ..., Row.tenant_id == ...)` chains: a row by its id within a
    tenant, written out."""
    found = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "where"
        ):
            continue
        chain, compared = node, set()
        while isinstance(chain, ast.Call) and isinstance(chain.func, ast.Attribute):
            if chain.func.attr == "where":
                for argument in chain.args:
                    if isinstance(argument, ast.Compare) and isinstance(argument.left, ast.Attribute):
                        compared.add((ast.unparse(argument.left.value), argument.left.attr))
            chain = chain.func.value
        if (
            isinstance(chain, ast.Call)
            and isinstance(chain.func, ast.Name)
            and chain.func.id == "select"
            and len(chain.args) == 1
            and isinstance(chain.args[0], ast.Name)
            and {(chain.args[0].id, "id"), (chain.args[0].id, "tenant_id")} <= compared
        ):
            found.append(node.lineno)
    return found


def test_a_row_by_its_id_within_its_tenant_is_read_by_one_helper() -> None:
    """`db.rows.get_scoped(session, Row, id=..., tenant_id=..., for_update=...)` is the one way a repository
    reads a row by id within its tenant (optionally locked): the same statement everywhere, written once."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in MODULES
        for line in _by_id_lookups(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not wrong, "rows by id within a tenant read without db.rows.get_scoped:\n" + "\n".join(wrong)


# Settings are reached one way: the process's wiring reads them (`get_settings()`), endpoints take them from
# `request.app.state.settings`, jobs from `ctx.settings`, and a service that needs one takes `settings=`.
# What the whole process shares (the master key, the provider slots, jobs' default attempts) is set once at
# startup by domains.start (and the CLI), never read from get_settings() where it is used.
SETTINGS_READERS = {"config.py", "app.py", "cli.py", "migrations/env.py"}


def test_services_take_settings_as_a_parameter() -> None:
    readers = set()
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and "get_settings" in (
                getattr(node.func, "id", None),
                getattr(node.func, "attr", None),
            ):
                readers.add(str(path.relative_to(ROOT)))
    assert readers <= SETTINGS_READERS, (
        f"get_settings() outside the wiring (take settings= instead): {readers - SETTINGS_READERS}"
    )
