"""The Python client openapi-generator makes from the reference document platpay follows.

The document is kept in tests/data/ (gzip; the reference directory is not in a clean clone, and
tests/e2e/test_reference_client.py checks the copy is the reference's where the reference is). The generator
(PyPI `openapi-generator-cli`, pinned in pyproject.toml's dev extras, its jar inside the wheel) needs a Java
runtime: .ci/run installs Debian's `default-jre-headless` when `java` is missing. Its JVM takes several
seconds and the document is large, so the client is generated once and kept under .pytest_cache, keyed by the
document's hash, the generator's version and its options: a run after the first reuses it.

Refresh the kept document after the reference moves (and read `tools/reference_drift.py OLD NEW` first):
PLATPAY_UPDATE_REFERENCE_DOCUMENT=1 pytest tests/e2e/test_reference_client.py -k kept_copy
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.openapi_reference import REFERENCE_DOCUMENT, REFERENCE_YAML
from tests.support.processes import REPO_ROOT

KEPT_DOCUMENT = REPO_ROOT / "tests" / "data" / f"{REFERENCE_DOCUMENT}.gz"
PACKAGE = "refclient"
# As a user would generate it (the default urllib3 library); lazy imports only make the import of ~700
# models fast, and no tests or docs are written.
GENERATOR_ARGS = [
    "generate", "-g", "python", "--package-name", PACKAGE,
    "--additional-properties=lazyImports=true,generateSourceCodeOnly=true",
    "--global-property", "apiTests=false,modelTests=false,apiDocs=false,modelDocs=false",
]  # fmt: skip
GENERATOR_TIMEOUT = 300.0


def kept_document() -> bytes:
    return gzip.decompress(KEPT_DOCUMENT.read_bytes())


def write_kept_document(document: bytes) -> None:
    KEPT_DOCUMENT.write_bytes(gzip.compress(document, compresslevel=9, mtime=0))


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        if os.environ.get("PLATPAY_TEST_REQUIRE_JAVA"):
            pytest.fail(
                "PLATPAY_TEST_REQUIRE_JAVA is set but there is no `java` (Debian: default-jre-headless)"
            )
        pytest.skip(
            "no Java runtime here, so the client generated from the reference is not run (CI has one)"
        )
    return java


def generate(cache_root: Path) -> Path:
    """The directory holding the generated package, generated now unless already kept for this document."""
    _java()
    document = kept_document()
    version = importlib.metadata.version("openapi-generator-cli")
    key = hashlib.sha256(b"\0".join([document, version.encode(), " ".join(GENERATOR_ARGS).encode()]))
    target = cache_root / f"{PACKAGE}-{version}-{key.hexdigest()[:16]}"
    if (target / ".complete").is_file():
        return target
    building = cache_root / f"{target.name}.building-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    source = building / REFERENCE_DOCUMENT
    source.write_bytes(document)
    generator = Path(sys.executable).parent / "openapi-generator-cli"
    result = subprocess.run(
        [str(generator), *GENERATOR_ARGS, "-i", str(source), "-o", str(building / "client")],
        capture_output=True, text=True, timeout=GENERATOR_TIMEOUT, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"openapi-generator failed:\n{(result.stdout + result.stderr)[-4000:]}"
    (building / "client" / ".complete").write_text(version)
    shutil.rmtree(target, ignore_errors=True)
    (building / "client").rename(target)
    shutil.rmtree(building, ignore_errors=True)
    return target


def import_client(directory: Path) -> ModuleType:
    """The generated package, imported from `directory` (once per test process)."""
    loaded = sys.modules.get(PACKAGE)
    if loaded is not None:
        assert Path(loaded.__file__ or "").parent.parent == directory, "another generated client is loaded"
        return loaded
    sys.path.insert(0, str(directory))
    return importlib.import_module(PACKAGE)


def the_reference_is_here() -> bool:
    return REFERENCE_YAML.is_file()
