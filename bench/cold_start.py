"""Cold start of `platpay serve` installed from the wheel: process start to /readyz 200, on SQLite and
PostgreSQL, over several rounds; beside it the wheel's size and, when `make image` built one, the image's.

Setup, in a temporary directory: the wheel (`pip wheel --no-deps`) installed with `--no-deps` into a fresh
virtual environment whose dependencies come from this venv's site-packages (a .pth file after its own
packages, as tests/install/test_wheel.py does: platpay itself is the wheel's). Each round starts
`platpay serve` from an empty working directory and polls /readyz every 10 ms:

* `first start`: an empty database (SQLite: a new file; PostgreSQL: a new throwaway database), so the
  figure includes every migration and the sandbox platform's bootstrap;
* `restart`: the same database again, already at head (what a deploy or a crash restart costs).

The server is stopped with SIGTERM after each round. Figures only (median, min, max); never fails on one.

    .venv/bin/python bench/cold_start.py [--rounds 5] [--backends sqlite,postgres]
"""

from __future__ import annotations

import argparse
import base64
import os
import shlex
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    DEFAULT_PG_ADMIN,
    ROOT,
    bench_env,
    free_port,
    machine_summary,
    pg_database,
    pg_reachable,
    stop,
)


def install_wheel(workdir: Path) -> tuple[Path, Path]:
    """(the wheel, the installed `platpay` command)."""
    dist = workdir / "dist"
    build = workdir / "source"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(workdir / "source.tar"), "HEAD"],
        check=True,
    )
    build.mkdir()
    subprocess.run(["tar", "-xf", str(workdir / "source.tar"), "-C", str(build)], check=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(build),
        ],
        check=True,
    )
    [wheel] = dist.glob("platpay-*.whl")
    venv = workdir / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    paths = sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})
    (Path(own) / "bench_dependencies.pth").write_text("\n".join(paths) + "\n")
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--force-reinstall",
            str(wheel),
        ],
        check=True,
        env=bench_env(),
    )
    return wheel, venv / "bin" / "platpay"


def one_start(platpay: Path, env: dict[str, str], cwd: Path) -> float:
    """Seconds from starting `platpay serve` to its first /readyz 200."""
    port = free_port()
    started = time.monotonic()
    proc = subprocess.Popen(
        [str(platpay), "serve", "--port", str(port)],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with httpx.Client(trust_env=False, timeout=2) as client:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"platpay serve exited with {proc.returncode}")
                try:
                    if client.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                        return time.monotonic() - started
                except httpx.HTTPError:
                    pass
                if time.monotonic() - started > 300:
                    raise RuntimeError("no /readyz 200 after 300 s")
                time.sleep(0.01)
    finally:
        stop(proc, timeout=30)


def summary(label: str, figures: list[float]) -> str:
    return (
        f"  {label:<12} median {statistics.median(figures):6.2f} s   min {min(figures):6.2f} s   "
        f"max {max(figures):6.2f} s   ({len(figures)} rounds)"
    )


def image_size() -> str:
    podman = shlex.split(os.environ.get("PODMAN", "podman --runtime runc --cgroup-manager cgroupfs"))
    env = {
        **os.environ,
        "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(ROOT / "tools/image/containers.conf")),
    }
    try:
        result = subprocess.run(
            [*podman, "image", "inspect", "--format", "{{.Size}}", "localhost/platpay:latest"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown ({error})"
    if result.returncode != 0:
        return "no image (run `make image`)"
    return f"{int(result.stdout.strip()) / 1e6:.0f} MB (localhost/platpay:latest, uncompressed)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--pg-admin-url", default=DEFAULT_PG_ADMIN)
    args = parser.parse_args()
    print(machine_summary())
    key = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    with tempfile.TemporaryDirectory(prefix="platpay-cold-") as tmp:
        workdir = Path(tmp)
        wheel, platpay = install_wheel(workdir)
        print(f"wheel: {wheel.name}, {wheel.stat().st_size / 1e3:.0f} kB")
        print(f"image: {image_size()}")
        for backend in args.backends.split(","):
            first, again = [], []
            for round_number in range(args.rounds):
                cwd = workdir / f"{backend}-{round_number}"
                cwd.mkdir()
                if backend == "sqlite":
                    env = bench_env(PLATPAY_MASTER_KEY=key)  # ./var/platpay.db in the empty directory
                    first.append(one_start(platpay, env, cwd))
                    again.append(one_start(platpay, env, cwd))
                    continue
                reason = pg_reachable(args.pg_admin_url)
                if reason is not None:
                    print(f"postgres: skipped ({reason})")
                    break
                with pg_database(args.pg_admin_url, prefix="platpay_bench_cold") as url:
                    env = bench_env(PLATPAY_MASTER_KEY=key, PLATPAY_DATABASE_URL=url)
                    first.append(one_start(platpay, env, cwd))
                    again.append(one_start(platpay, env, cwd))
            if first:
                print(f"{backend}: process start to /readyz 200")
                print(summary("first start", first))
                print(summary("restart", again))


if __name__ == "__main__":
    main()
