"""Real processes for end-to-end tests: start them, wait until they are ready, stop them by PID.

Every process is started in a session of its own, so its process group id is its PID: stopping it reaches
the children it forked (uvicorn's worker processes) without ever looking anything up by name. Output goes
to files, never to pipes, so a chatty process can never block on a full pipe and its log is there to show
when a test fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN_DIR = Path(sys.executable).parent
PLATPAY = str(BIN_DIR / "platpay")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_env(**overrides: str | None) -> dict[str, str]:
    """The test's environment without any PLATPAY_ setting, plus `overrides` (None removes a name).

    The repository root is put on PYTHONPATH so a worker can load job plugins from `tests`.
    """
    env = {name: value for name, value in os.environ.items() if not name.startswith("PLATPAY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


class ProcessFailed(AssertionError):
    pass


@dataclass
class ManagedProcess:
    name: str
    args: list[str]
    popen: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path
    descendants: dict[int, psutil.Process] = field(default_factory=dict)  # every one seen, by pid
    terminated: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace") if self.stdout_path.exists() else ""

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def describe(self, tail: int = 3000) -> str:
        state = "running" if self.alive() else f"exited with {self.popen.returncode}"
        return (
            f"process {self.name} (pid {self.pid}, {state}): {' '.join(self.args)}\n"
            f"--- stdout (tail) ---\n{self.stdout()[-tail:]}\n--- stderr (tail) ---\n{self.stderr()[-tail:]}"
        )

    def children(self) -> list[psutil.Process]:
        """Its live descendants (each one is also remembered, to be reaped by `stop`)."""
        try:
            found = psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        self.descendants.update({child.pid: child for child in found})
        return found

    def wait_for_output(self, pattern: str, *, timeout: float = 30.0) -> re.Match[str]:
        """The first match of `pattern` in stdout+stderr; fails early if the process exits first."""
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.stdout()) or regex.search(self.stderr())
            if match:
                return match
            if not self.alive():
                raise ProcessFailed(f"exited before printing {pattern!r}\n{self.describe()}")
            if time.monotonic() > deadline:
                raise ProcessFailed(f"no {pattern!r} after {timeout}s\n{self.describe()}")
            time.sleep(0.05)

    def wait_http_ready(self, url: str, *, timeout: float = 30.0) -> None:
        """Poll `url` until it answers 200; fails early if the process exits first."""
        deadline = time.monotonic() + timeout
        last_error = "no answer yet"
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                if not self.alive():
                    raise ProcessFailed(f"exited before {url} answered\n{self.describe()}")
                try:
                    response = client.get(url)
                    if response.status_code == 200:
                        return
                    last_error = f"HTTP {response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as error:
                    last_error = repr(error)
                if time.monotonic() > deadline:
                    raise ProcessFailed(f"{url} not ready after {timeout}s ({last_error})\n{self.describe()}")
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL this process alone (a crash: no shutdown code runs), and reap it."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
        self.popen.wait(timeout=10)

    def terminate(self) -> None:
        """Ask for a graceful shutdown (SIGTERM, once: a second one makes uvicorn force its exit)."""
        self.children()  # remembered, to be reaped by `stop`
        if self.alive() and not self.terminated:
            self.terminated = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def stop(self, *, timeout: float = 10.0) -> bool:
        """SIGTERM; after `timeout` SIGKILL its whole process group; reap every descendant seen.

        True if the process exited on SIGTERM within `timeout` (a graceful shutdown)."""
        self.terminate()
        try:
            self.popen.wait(timeout=timeout)
            graceful = True
        except subprocess.TimeoutExpired:
            graceful = False
            # Not reaped yet, so its pid (the group id: it leads its own session) cannot have been reused.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)
        descendants = list(self.descendants.values())
        for child in descendants:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()  # psutil checks it is still the same process, not a reused pid
        psutil.wait_procs(descendants, timeout=5)
        return graceful


class ProcessManager:
    """Starts processes for one test and stops every one of them at the end of it."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.processes: list[ManagedProcess] = []

    def start(
        self, name: str, args: list[str], *, env: dict[str, str], cwd: Path | None = None
    ) -> ManagedProcess:
        index = len(self.processes)
        stdout_path = self.log_dir / f"{index:02d}-{name}.out"
        stderr_path = self.log_dir / f"{index:02d}-{name}.err"
        with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
            popen = subprocess.Popen(
                args,
                env=env,
                cwd=cwd or REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        process = ManagedProcess(name, args, popen, stdout_path, stderr_path)
        self.processes.append(process)
        return process

    def run(
        self, args: list[str], *, env: dict[str, str], cwd: Path | None = None, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a command to completion (killed by its PID at `timeout`); fails on a non-zero exit."""
        result = subprocess.run(
            args, env=env, cwd=cwd or REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
        if result.returncode != 0:
            raise ProcessFailed(
                f"{' '.join(args)} exited with {result.returncode}\n"
                f"--- stdout ---\n{result.stdout[-3000:]}\n--- stderr ---\n{result.stderr[-3000:]}"
            )
        return result

    def describe_all(self) -> str:
        return "\n\n".join(process.describe() for process in self.processes)

    def stop_all(self) -> None:
        """Every process shuts down at once, then each is waited for (and killed if it hangs)."""
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.stop()
