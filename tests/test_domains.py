"""Domains register themselves: discovering the `domain.py` modules (platpay.domains.load) finds every
table, job handler, router and event type the code defines — nothing hides in a module no domain lists."""

from __future__ import annotations

import json
import subprocess
import sys

from platpay import BASE_PATH, domains
from platpay.kit.domain_spec import Domain

# Run in fresh interpreters: what one process has imported (Base.metadata, the job registry) is global.
_REPORT = """
import importlib, json, pkgutil, sys
import platpay
from fastapi import APIRouter
if sys.argv[1] == "all":
    for info in pkgutil.walk_packages(platpay.__path__, "platpay."):
        importlib.import_module(info.name)
else:
    from platpay import BASE_PATH, domains
    domains.load()
from platpay.db.base import Base
from platpay.jobs import registry
routes = set()
for module in list(sys.modules.values()):
    if getattr(module, "__name__", "").startswith("platpay."):
        for value in vars(module).values():
            if isinstance(value, APIRouter):
                routes |= {(route.path, tuple(sorted(route.methods))) for route in value.routes}
print(json.dumps({"tables": sorted(Base.metadata.tables), "jobs": sorted(registry._HANDLERS),
                  "routes": sorted(map(list, routes))}))
"""


def _report(which: str) -> dict[str, list]:
    out = subprocess.run(
        [sys.executable, "-c", _REPORT, which], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(out.stdout)


def test_discovery_finds_everything_the_code_defines() -> None:
    discovered, everything = _report("domains"), _report("all")
    for part in ("tables", "jobs", "routes"):
        missing = sorted(set(map(str, everything[part])) - set(map(str, discovered[part])))
        assert not missing, f"{part} no domain.py lists: {missing}"


def test_every_domain_is_described() -> None:
    loaded = domains.load()
    assert all(isinstance(domain, Domain) for domain in loaded)
    names = [domain.name for domain in loaded]
    assert len(names) == len(set(names))
    mounted = [mount.router for mount in domains.mounts()]
    assert len(mounted) == len({id(router) for router in mounted}), "a router is mounted twice"


def test_the_csv_upload_takes_a_larger_body(settings) -> None:
    """A domain's own body limits reach the edge middleware: the bulk CSV upload may exceed
    PLATPAY_MAX_BODY_BYTES by the file limit plus the multipart envelope."""
    limits = domains.body_limits(settings)
    upload = f"{BASE_PATH}/customers/bulk/csv"
    assert limits[upload] > settings.max_body_bytes
    assert limits[upload] >= settings.bulk_import_max_bytes
