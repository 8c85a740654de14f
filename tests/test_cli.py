"""The `platpay` command line refuses options it cannot honour, with a usage error (exit code 2)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import values as prometheus_values
from typer.testing import CliRunner

from platpay import cli, metrics
from platpay.config import get_settings


class ServerStarted(Exception):
    """Raised instead of serving: a test must never leave a server listening."""


def plain(output: str) -> str:
    """The output without the error box's drawing characters and line wrapping."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", output).split())


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Settings on a scratch SQLite file, uvicorn.run and platpay.serving.run (--workers N) replaced by a
    recorder that stops the command."""
    import uvicorn

    settings = get_settings().model_copy(
        update={"database_url": f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}", "var_dir": tmp_path / "var"}
    )
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    for name in ("PLATPAY_HOST", "PLATPAY_PORT", "PLATPAY_RUN_EMBEDDED_WORKER"):
        monkeypatch.setenv(name, "restored after the test")  # serve --workers N writes them
    # serve and worker switch the process to multiprocess metrics: switched back after the test. (setenv
    # first: delenv of an unset variable records nothing to restore, and serve then sets it for good.)
    monkeypatch.setenv(metrics.MULTIPROCESS_ENV, "")
    monkeypatch.delenv(metrics.MULTIPROCESS_ENV)
    import platpay.app

    monkeypatch.setattr(platpay.app, "freeze_startup_objects", lambda: None)  # not in the test process
    monkeypatch.setattr(prometheus_values, "ValueClass", prometheus_values.ValueClass)
    monkeypatch.setattr(metrics, "_process_metrics", metrics._process_metrics)
    calls: list[dict[str, Any]] = []

    def fake_run(app: Any, **options: Any) -> None:
        calls.append({**options, "metrics_dir": os.environ.get(metrics.MULTIPROCESS_ENV)})
        raise ServerStarted

    monkeypatch.setattr(uvicorn, "run", fake_run)
    from platpay import serving

    monkeypatch.setattr(serving, "run", fake_run)  # --workers N: the balanced supervisor
    return calls


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli.app, list(args))


class TestServeOptions:
    @pytest.mark.parametrize("port", ["0", "-1", "65536", "99999"])
    def test_a_port_outside_1_to_65535_is_refused(self, served, port):
        result = invoke("serve", "--port", port)
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--port'" in plain(result.output)
        assert served == []

    @pytest.mark.parametrize("workers", ["0", "-3"])
    def test_fewer_than_one_worker_is_refused(self, served, workers):
        result = invoke("serve", "--workers", workers)
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--workers'" in plain(result.output)
        assert served == []

    def test_a_port_outside_the_range_from_the_environment_is_refused(self, served, monkeypatch):
        settings = cli.get_settings().model_copy(update={"port": 70000})
        monkeypatch.setattr(cli, "get_settings", lambda: settings)
        result = invoke("serve")
        assert result.exit_code == 2, result.output
        assert "70000 is not a TCP port (1-65535)" in plain(result.output)
        assert served == []

    def test_the_edges_of_the_range_are_served_on_exactly_that_port(self, served):
        for port in ("1", "65535"):
            result = invoke("serve", "--port", port, "--no-worker")
            assert isinstance(result.exception, ServerStarted), result.output
        assert [call["port"] for call in served] == [1, 65535]

    def test_several_workers_are_passed_to_the_balanced_supervisor_with_one_metrics_directory(
        self, served, tmp_path
    ):
        stale = tmp_path / "var" / "metrics" / "counter_999999999.db"  # no such process
        stale.parent.mkdir(parents=True)
        stale.write_bytes(b"")
        result = invoke("serve", "--port", "8123", "--workers", "2")
        assert isinstance(result.exception, ServerStarted), result.output
        assert served[0]["workers"] == 2 and served[0]["port"] == 8123
        # The server processes inherit the directory; what processes no longer running left there is gone.
        assert served[0]["metrics_dir"] == str(tmp_path / "var" / "metrics")
        assert not stale.exists()

    @pytest.mark.parametrize(
        ("run_embedded_worker", "flags", "expected"),
        [(True, [], "true"), (True, ["--no-worker"], "false"), (False, [], "false")],
    )
    def test_several_workers_keep_the_embedded_worker_setting(
        self, served, monkeypatch, run_embedded_worker, flags, expected
    ):
        """Children rebuild their settings from the environment: PLATPAY_RUN_EMBEDDED_WORKER=false must
        reach them as surely as --no-worker does."""
        import os

        settings = cli.get_settings().model_copy(update={"run_embedded_worker": run_embedded_worker})
        monkeypatch.setattr(cli, "get_settings", lambda: settings)
        result = invoke("serve", "--workers", "2", *flags)
        assert isinstance(result.exception, ServerStarted), result.output
        assert os.environ["PLATPAY_RUN_EMBEDDED_WORKER"] == expected


class TestWorkerOptions:
    def test_a_concurrency_below_one_is_refused(self, served, monkeypatch):
        from platpay.jobs.runner import JobRunner

        async def never_run(_runner: JobRunner) -> None:
            raise ServerStarted

        monkeypatch.setattr(JobRunner, "run_forever", never_run)
        result = invoke("worker", "--concurrency", "0")
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--concurrency'" in plain(result.output)

    def test_an_unknown_lane_is_refused_naming_the_lanes_there_are(self, served, tmp_path):
        result = invoke("worker", "--lanes", "webhooks,webhook")
        assert result.exit_code == 2, result.output
        assert (
            "Invalid value for '--lanes': unknown lane 'webhook'; the lanes are: default, messages, webhooks"
            in plain(result.output)
        )
        assert not (tmp_path / "cli.db").exists()  # refused before touching the database

    def test_no_lane_at_all_is_refused(self, served):
        result = invoke("worker", "--lanes", " , ")
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--lanes': no lane named" in plain(result.output)

    @pytest.mark.parametrize(
        ("flags", "claimed"),
        [
            ([], ["default", "webhooks", "messages"]),
            (["--lanes", "webhooks"], ["webhooks"]),
            (["--lanes", " messages , default "], ["default", "messages"]),
        ],
    )
    def test_the_worker_claims_the_lanes_named_or_every_lane(self, served, monkeypatch, flags, claimed):
        from platpay.jobs.runner import JobRunner

        seen: list[list[str]] = []

        async def record_lanes(runner: JobRunner) -> None:
            seen.append([lane.name for lane in runner.lanes()])
            raise ServerStarted

        monkeypatch.setattr(JobRunner, "run_forever", record_lanes)
        result = invoke("worker", *flags)
        assert isinstance(result.exception, ServerStarted), result.output
        assert sorted(seen[0]) == sorted(claimed)

    def test_help_lists_the_lanes_option(self):
        result = invoke("worker", "--help")
        assert result.exit_code == 0
        assert "--lanes" in result.output and "webhooks" in result.output


class TestPlatformCreate:
    def test_regulated_and_unregulated_together_are_refused(self, served, tmp_path):
        result = invoke("platform", "create", "--name", "Both", "--regulated", "--unregulated")
        assert result.exit_code == 2, result.output
        assert "give --regulated or --unregulated, not both" in plain(result.output)
        assert not (tmp_path / "cli.db").exists()  # refused before touching the database

    @pytest.mark.parametrize(
        ("flags", "regulated"), [([], False), (["--unregulated"], False), (["--regulated"], True)]
    )
    def test_each_flag_alone_creates_that_kind_of_platform(self, served, flags, regulated):
        import asyncio
        import json

        result = invoke("platform", "create", "--name", "One", "--json", *flags)
        assert result.exit_code == 0, result.output
        platform_id = json.loads(result.stdout.splitlines()[-1])["platformId"]  # after any log lines
        assert asyncio.run(_is_regulated(cli.get_settings().database_url, platform_id)) is regulated


async def _is_regulated(database_url: str, platform_id: str) -> bool:
    from sqlalchemy import text

    from platpay.db.database import Database

    db = Database(database_url, null_pool=True)
    try:
        async with db.read() as session:
            rows = (
                (await session.execute(text("SELECT * FROM platforms WHERE id = :id"), {"id": platform_id}))
                .mappings()
                .one()
            )
    finally:
        await db.dispose()
    return bool(rows["is_regulated"])


@pytest.mark.parametrize(
    ("database_url", "choice", "expected"),
    [
        ("sqlite+aiosqlite:///var/platpay.db", "auto", "asyncio"),
        ("postgresql+asyncpg://postgres@127.0.0.1/platpay", "auto", "uvloop"),
        ("sqlite+aiosqlite:///var/platpay.db", "uvloop", "uvloop"),
        ("postgresql+asyncpg://postgres@127.0.0.1/platpay", "asyncio", "asyncio"),
    ],
)
def test_event_loop_follows_the_database_unless_chosen(database_url, choice, expected) -> None:
    from platpay.config import Settings

    settings = Settings(database_url=database_url, event_loop=choice)
    assert settings.chosen_event_loop() == expected


def test_an_unknown_event_loop_is_refused() -> None:
    from pydantic import ValidationError

    from platpay.config import Settings

    with pytest.raises(ValidationError, match="event_loop"):
        Settings(event_loop="trio")
