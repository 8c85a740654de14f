"""A mistake in the settings ends a command with one line on stderr naming the setting or the problem and a
non-zero exit, never a traceback, and never repeating a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.install.support import clean_env, one_error_line
from tests.support.processes import PLATPAY, ProcessManager, free_port

pytestmark = pytest.mark.e2e

MALFORMED_KEY = "c2hvcnQ-a2V5"  # base64url of 9 bytes
CASES = {
    "a master key that is not 32 bytes": (
        "serve",
        {"PLATPAY_MASTER_KEY": MALFORMED_KEY},
        2,
        "PLATPAY_MASTER_KEY must be base64url of exactly 32 bytes, not 9",
    ),
    "a master key that is not base64url": (
        "worker",
        {"PLATPAY_MASTER_KEY": "not a key!"},
        2,
        "PLATPAY_MASTER_KEY",
    ),
    "an empty master key (an unset variable interpolated)": (
        "serve",
        {"PLATPAY_MASTER_KEY": ""},
        2,
        "PLATPAY_MASTER_KEY is empty",
    ),
    "a missing master key file (a secret not mounted)": (
        "serve",
        {"PLATPAY_MASTER_KEY_FILE": "/run/secrets/no-such-master-key"},
        2,
        "PLATPAY_MASTER_KEY_FILE: cannot read /run/secrets/no-such-master-key: No such file or directory",
    ),
    "an unknown event loop": ("migrate", {"PLATPAY_EVENT_LOOP": "trio"}, 2, "PLATPAY_EVENT_LOOP"),
    "a port that is not a number": ("serve", {"PLATPAY_PORT": "eighty"}, 2, "PLATPAY_PORT"),
    "a boolean that is not one": ("serve", {"PLATPAY_LOG_JSON": "sometimes"}, 2, "PLATPAY_LOG_JSON"),
    "a negative timeout": ("worker", {"PLATPAY_DB_TIMEOUT_SECONDS": "-1"}, 2, "PLATPAY_DB_TIMEOUT_SECONDS"),
    "a JSON setting that is not JSON": (
        "serve",
        {"PLATPAY_WEBAUTHN_ORIGINS": "https://app.example"},
        2,
        "PLATPAY_WEBAUTHN_ORIGINS is not valid JSON",
    ),
    "a database URL platpay has no driver for": (
        "migrate",
        {"PLATPAY_DATABASE_URL": "mysql://platpay:hunter2@db/platpay"},
        2,
        "PLATPAY_DATABASE_URL: the driver 'mysql' is not supported",
    ),
    "a PostgreSQL URL without the asyncpg driver": (
        "serve",
        {"PLATPAY_DATABASE_URL": "postgresql://platpay:hunter2@db/platpay"},
        2,
        "use postgresql+asyncpg://",
    ),
    "an unreachable database": (
        "serve",
        {
            "PLATPAY_DATABASE_URL": "postgresql+asyncpg://platpay:hunter2@127.0.0.1:1/platpay",
            "PLATPAY_DB_STARTUP_TIMEOUT_SECONDS": "0",
        },
        1,
        "the database at postgresql+asyncpg://platpay:***@127.0.0.1:1/platpay is still unavailable",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_setting_is_one_line_naming_it(case: str, processes: ProcessManager, tmp_path: Path) -> None:
    command, settings, code, expected = CASES[case]
    args = [PLATPAY, command, *(["--port", str(free_port())] if command == "serve" else [])]
    env = clean_env(PLATPAY_VAR_DIR=str(tmp_path / "var"), **settings)
    process = processes.start(command, args, env=env, cwd=tmp_path)
    assert process.popen.wait(timeout=120) == code, process.describe()
    line = one_error_line(process, process.stderr(), process.stdout())
    assert expected in line, line
    for secret in ("hunter2", MALFORMED_KEY, "not a key!"):
        assert secret not in process.stderr() + process.stdout()


def test_a_generated_master_key_file_that_is_not_a_key_stops_serve(
    processes: ProcessManager, tmp_path: Path
) -> None:
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "master.key").write_text("truncated")
    env = clean_env(PLATPAY_VAR_DIR=str(tmp_path / "var"))
    process = processes.start("serve", [PLATPAY, "serve", "--port", str(free_port())], env=env, cwd=tmp_path)
    assert process.popen.wait(timeout=120) == 2, process.describe()
    line = one_error_line(process, process.stderr(), process.stdout())
    assert line.startswith(f"platpay serve: the master key in {tmp_path / 'var' / 'master.key'} "), line
