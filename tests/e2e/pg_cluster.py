"""A private PostgreSQL cluster for tests that stop and start the database itself (a restart is what they
test, so they cannot use the shared server): made with `initdb`, run with `pg_ctl` as the `postgres` user
when the tests run as root (PostgreSQL refuses to run as root), in a directory of its own, on a free port.

Host connections need the password (scram-sha-256), so that a wrong one is refused as in production.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.pg import PgProbe
from tests.support.processes import free_port

USER = "postgres"
PASSWORD = "startup-test-password"


def find_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class PrivateCluster:
    def __init__(self) -> None:
        initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise FileNotFoundError("initdb and pg_ctl are needed for a private PostgreSQL cluster")
        self.pg_ctl = pg_ctl
        # Outside the test's tmp_path: the postgres user must reach it, and tmp_path's parents are private.
        self.root = Path(tempfile.mkdtemp(prefix="platpay-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            account = pwd.getpwnam(USER)
            os.chown(self.root, account.pw_uid, account.pw_gid)
        password_file = self.root / "password"
        password_file.write_text(PASSWORD + "\n")
        if self.as_postgres:
            os.chown(password_file, account.pw_uid, account.pw_gid)
        self._run(
            initdb,
            "-D",
            str(self.data),
            "-U",
            USER,
            f"--pwfile={password_file}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )

    def _run(self, *args: str) -> None:
        command = ["runuser", "-u", USER, "--", *args] if self.as_postgres else list(args)
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args)} failed: {result.stdout}\n{result.stderr}\n{self.server_log()}"
            )

    def server_log(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def url(self, database: str, *, password: str = PASSWORD) -> str:
        return f"postgresql+asyncpg://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self) -> None:
        self._run(self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def create_database(self, name: str) -> None:
        probe = PgProbe(self.dsn())
        try:
            probe.execute(f'CREATE DATABASE "{name}"')
        finally:
            probe.close()

    def standby(self) -> PrivateCluster:
        """A hot standby of this running cluster (a base backup that streams from it: `pg_basebackup -R`), in a
        directory of its own, on a free port; not started. Its `promote()` makes it a primary."""
        basebackup = find_binary("pg_basebackup")
        if basebackup is None:
            raise FileNotFoundError("pg_basebackup is needed for a standby")
        replica = PrivateCluster.__new__(PrivateCluster)
        replica.pg_ctl = self.pg_ctl
        replica.root = Path(tempfile.mkdtemp(prefix="platpay-pg-standby-"))
        replica.data = replica.root / "data"
        replica.log = replica.root / "server.log"
        replica.port = free_port()
        replica.as_postgres = self.as_postgres
        if self.as_postgres:
            account = pwd.getpwnam(USER)
            os.chown(replica.root, account.pw_uid, account.pw_gid)
        # Over the primary's Unix socket, where initdb's pg_hba.conf trusts replication connections.
        self._run(
            basebackup, "-h", str(self.root), "-p", str(self.port), "-U", USER, "-D", str(replica.data),
            "-R", "-X", "stream", "--no-sync", "--checkpoint=fast",
        )  # fmt: skip
        return replica

    def promote(self) -> None:
        self._run(self.pg_ctl, "-D", str(self.data), "-w", "promote")

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            if self.running():
                self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
