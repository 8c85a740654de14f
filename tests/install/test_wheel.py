"""platpay installed as a user installs it: the sdist is built from a copy of the checkout, the wheel from
the unpacked sdist (so the sdist must hold everything), the wheel is installed into a fresh virtual
environment in a temporary directory, and its `platpay` migrates, creates a platform, serves and moves
one payment from an empty directory, on SQLite and PostgreSQL.

The fresh environment gets platpay from the wheel alone (`pip install --no-deps`); its dependencies come
from the test environment's site-packages, appended to its path by a .pth file (after its own
site-packages, so platpay itself is the wheel's: asserted), which keeps the test to seconds and off the
package index."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.install.support import REPO_ROOT, Sql, clean_env, fast_jobs, pay_once, start_serve
from tests.support.processes import ProcessManager

pytestmark = pytest.mark.e2e

VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
# What an sdist is built from: the package and the files pyproject.toml names.
SOURCE_ENTRIES = ("pyproject.toml", "README.md", "CHANGELOG.md", "platpay")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


@dataclass(frozen=True)
class Built:
    package_files: frozenset[str]  # every file of the package tree, relative to the source root
    sdist: Path
    wheel: Path


@dataclass(frozen=True)
class Installed:
    venv: Path
    python: str
    platpay: str


def _run(
    args: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> str:
    result = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, (
        f"{' '.join(map(str, args))}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("build")
    source = root / "source"
    for entry in SOURCE_ENTRIES:
        if (REPO_ROOT / entry).is_dir():
            shutil.copytree(REPO_ROOT / entry, source / entry, ignore=IGNORED)
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(REPO_ROOT / entry, source / entry)
    package_files = frozenset(
        str(path.relative_to(source)) for path in (source / "platpay").rglob("*") if path.is_file()
    )
    dist = root / "dist"
    # The PEP 517 hook itself, as `python -m build --sdist --no-isolation` calls it.
    name = _run(
        [
            sys.executable,
            "-c",
            "import setuptools.build_meta as b, sys; print(b.build_sdist(sys.argv[1]))",
            dist,
        ],
        cwd=source,
    ).split()[-1]
    sdist = dist / name
    unpacked = root / "unpacked"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    [sdist_root] = unpacked.iterdir()
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            dist,
            sdist_root,
        ],
        cwd=root,
    )
    [wheel] = dist.glob("platpay-*.whl")
    return Built(package_files, sdist, wheel)


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=venv.parent)
    python = venv / "bin" / "python"
    own_site = Path(
        _run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=venv.parent
        ).strip()
    )
    # The dependencies (and pip) from this test environment, after the fresh environment's own packages.
    dependencies = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (own_site / "test_environment_dependencies.pth").write_text("\n".join(sorted(dependencies)) + "\n")
    _run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--force-reinstall",
            built.wheel,
        ],
        cwd=venv.parent,
        env=clean_env(),
    )
    return Installed(venv, str(python), str(venv / "bin" / "platpay"))


def _archive_names(built: Built) -> tuple[set[str], set[str]]:
    with tarfile.open(built.sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    with zipfile.ZipFile(built.wheel) as archive:
        in_wheel = set(archive.namelist())
    return in_sdist, in_wheel


class TestTheDistributions:
    def test_the_sdist_and_the_wheel_hold_every_file_of_the_package(self, built: Built) -> None:
        """Migrations, their alembic.ini and template, data and templates: whatever platpay reads at run time."""
        in_sdist, in_wheel = _archive_names(built)
        assert built.package_files - in_sdist == set()
        assert built.package_files - in_wheel == set()
        for needed in (
            "platpay/migrations/alembic.ini",
            "platpay/migrations/env.py",
            "platpay/migrations/script.py.mako",
            "platpay/migrations/versions/0001_initial_schema.py",
            "platpay/onboarding/page/templates/form.html",
            "platpay/kit/data/currencies.json",
        ):
            assert needed in in_wheel, needed
        assert built.wheel.name == f"platpay-{VERSION}-py3-none-any.whl"


class TestTheInstalledCommand:
    def test_platpay_is_imported_from_the_wheel_outside_the_checkout(
        self, installed: Installed, tmp_path: Path
    ) -> None:
        script = (
            "import json, platpay, platpay.db.migrate as m; "
            "print(json.dumps([platpay.__file__, str(m.MIGRATIONS_DIR), platpay.package_version()]))"
        )
        where, migrations, version = json.loads(
            _run([installed.python, "-c", script], cwd=tmp_path, env=clean_env())
        )
        assert Path(where).is_relative_to(installed.venv) and not Path(where).is_relative_to(REPO_ROOT)
        assert Path(migrations).is_relative_to(installed.venv)
        assert version == VERSION

    def test_the_version_is_the_package_metadata(self, installed: Installed, tmp_path: Path) -> None:
        assert (
            _run([installed.platpay, "--version"], cwd=tmp_path, env=clean_env()).strip()
            == f"platpay {VERSION}"
        )
        module = _run([installed.python, "-m", "platpay", "--version"], cwd=tmp_path, env=clean_env())
        assert module.strip() == f"platpay {VERSION}"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migrate_create_a_platform_serve_and_pay_from_an_empty_directory(
    backend: str,
    installed: Installed,
    processes: ProcessManager,
    master_key: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    workdir = tmp_path / "anywhere"
    workdir.mkdir()
    if backend == "sqlite":
        env = clean_env(**fast_jobs())  # every default: ./var/platpay.db and ./var/master.key, as `make run`
        database_url = f"sqlite+aiosqlite:///{workdir / 'var' / 'platpay.db'}"
    else:
        database_url = request.getfixturevalue("pg_database")
        env = clean_env(**fast_jobs(PLATPAY_DATABASE_URL=database_url, PLATPAY_MASTER_KEY=master_key))

    migrated = processes.run([installed.platpay, "migrate"], env=env, cwd=workdir)
    head = migrated.stdout.strip().splitlines()[-1].removeprefix("database at ")
    created = json.loads(
        processes.run(
            [installed.platpay, "platform", "create", "--name", "Installed", "--json"], env=env, cwd=workdir
        ).stdout
    )
    sandbox = created["sandbox"]["clientId"], created["sandbox"]["clientSecret"]
    server, base_url = start_serve(processes, installed.platpay, env, cwd=workdir)

    ready = httpx.get(f"{base_url}/readyz", trust_env=False, timeout=10).json()
    assert ready == {"status": "ready", "migration": head}
    assert httpx.get(f"{base_url}/healthz", trust_env=False).json() == {"status": "ok", "version": VERSION}
    document = httpx.get(f"{base_url}/openapi.json", trust_env=False, timeout=30).json()
    assert document["info"]["x-platpay-version"] == VERSION
    assert pay_once(base_url, sandbox)["status"] == "COMPLETED"

    assert server.stop(timeout=30), server.describe()  # SIGTERM: a graceful exit
    if backend == "sqlite":
        assert (workdir / "var" / "platpay.db").is_file() and (workdir / "var" / "master.key").is_file()
    sql = Sql(database_url)
    try:
        assert sql.fetch("SELECT version_num FROM alembic_version") == [(head,)]
    finally:
        sql.close()
    verify = processes.run([installed.platpay, "ledger", "verify"], env=env, cwd=workdir)
    assert "OK: every balance equals its postings" in verify.stdout, verify.stdout
