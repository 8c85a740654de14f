"""The pytest plugin (platpay.testing) as a user meets it: docs/testing.md's sample test file, run as written
by pytest in a subprocess, against a real `platpay serve` the plugin starts (one slow end-to-end test)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def documented_sample() -> str:
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    block = re.search(
        r"<!-- pytest-sample:start -->\n```python\n(.*?)```\n<!-- pytest-sample:end -->", text, re.DOTALL
    )
    assert block, "docs/testing.md lost its pytest sample (between the pytest-sample markers)"
    return block.group(1)


def _plugin_installed() -> bool:
    return any(entry.value == "platpay.testing" for entry in metadata.entry_points(group="pytest11"))


def test_the_documented_sample_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "test_payouts.py").write_text(documented_sample(), encoding="utf-8")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PLATPAY_") and not key.startswith("PYTEST_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    # An installed platpay registers the plugin by its entry point; this checkout may not be installed.
    plugin = [] if _plugin_installed() else ["-p", "platpay.testing"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "test_payouts.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "2 passed" in result.stdout
