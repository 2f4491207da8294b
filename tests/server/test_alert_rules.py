"""The documented alert rules load in Prometheus and fire on the series they are meant for
(`promtool check rules` and `promtool test rules`, from Debian's prometheus package)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

RULES = Path(__file__).resolve().parents[2] / "docs" / "guides" / "monitoring"


@pytest.mark.parametrize(
    "check", [["check", "rules", "etl-craft-alerts.yml"], ["test", "rules", "etl-craft-alerts.test.yml"]]
)
def test_promtool_accepts_the_alert_rules(check: list[str]) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus)")
    done = subprocess.run([promtool, *check], cwd=RULES, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
