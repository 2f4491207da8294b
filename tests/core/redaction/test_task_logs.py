"""Secrets etl-craft resolved never reach TASK_LOG or the attempt's log file (S7.C, S2.G.9), through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.harness import Harness, TaskSpec

TOKEN = "tok-9f8e7d6c5b4a"  # resolved by etl-craft: Docs_site.Authtoken names the variable

LEAKY_SCRIPT = """\
import logging
import os
import subprocess
import sys
import time
from urllib.parse import quote

from etl_craft.scripting import ScriptResult


def run(task):
    key = os.environ["DOCS_TOKEN"]
    url = f"https://api.example.com/v1/orders?api_key={key}&page=1"
    task.logger.info("fetching %s", url)
    logging.getLogger("urllib3.connectionpool").info("GET %s", url)
    logging.getLogger("urllib3.connectionpool").warning("retrying %s", url)
    print("printed:", url)
    print("encoded:", quote(url, safe=""))
    sys.stdout.write(key[:5])
    sys.stdout.flush()
    time.sleep(0.05)
    sys.stdout.write(key[5:] + " (written in two pieces)\\n")
    os.write(2, f"raw fd 2: {key}\\n".encode())
    subprocess.run(["sh", "-c", f"echo child process: {key}"], check=True)
    if task.input_params.get("fail"):
        raise RuntimeError(f"could not fetch {url}")
    return ScriptResult(row_count=1, variables={"SOURCE_URL": url})
"""

KILLED_SCRIPT = """\
import os
import signal
import time


def run(task):
    key = os.environ["DOCS_TOKEN"]
    print("before the crash:", key)
    # Output that bypasses the task process's pipe (as a crashed writer's would), then a hard crash.
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith(".attempt-1.log"):
            with open(target, "a") as log:
                log.write(f"straight into the file: {key}\\n")
    time.sleep(0.3)
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def secret_project(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Harness:
    monkeypatch.setenv("DOCS_TOKEN", TOKEN)
    harness.project.extra_sections = "Docs_site:\n  Authtoken: DOCS_TOKEN\n"
    harness.project.write_config()
    (harness.root / "ingestion_scripts" / "leaky.py").write_text(LEAKY_SCRIPT)
    (harness.root / "ingestion_scripts" / "killed.py").write_text(KILLED_SCRIPT)
    return harness


def _log_file(harness: Harness, task: str) -> str:
    return Path(harness.attempts(task)[0].log_path).read_text()


def test_a_script_logging_a_url_with_a_resolved_secret_leaves_no_trace(secret_project: Harness) -> None:
    harness = secret_project
    harness.pipeline("p", [TaskSpec("fetch", parameters={"SCRIPT_NAME": "leaky.py"})])
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 0, str(result)
    task_log = harness.task_runs()["fetch"].task_log
    log_file = _log_file(harness, "fetch")
    for text in (task_log, log_file, result.stdout, result.stderr):
        assert TOKEN not in text
        assert TOKEN[5:] not in text
    masked = "https://api.example.com/v1/orders?api_key=***&page=1"
    assert f"fetching {masked}" in log_file
    assert f"retrying {masked}" in log_file  # a WARNING from a URL logger is kept, masked
    assert "GET https://" not in log_file  # its INFO records are not (S2.G.9)
    assert f"printed: {masked}" in log_file
    assert "encoded: https%3A%2F%2Fapi.example.com%2Fv1%2Forders%3Fapi_key%3D***%26page%3D1" in log_file
    assert "*** (written in two pieces)" in log_file
    assert "raw fd 2: ***" in log_file
    assert "child process: ***" in log_file
    assert f"SOURCE_URL = {masked}" in task_log
    assert f"printed: {masked}" in task_log  # the tail of the log file


def test_a_failure_message_holding_a_secret_is_masked(secret_project: Harness) -> None:
    harness = secret_project
    harness.pipeline("p", [TaskSpec("fetch", {"fail": True}, parameters={"SCRIPT_NAME": "leaky.py"})])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 1
    task_run = harness.task_runs()["fetch"]
    assert "could not fetch https://api.example.com/v1/orders?api_key=***&page=1" in task_run.error_message
    assert TOKEN not in task_run.error_message
    assert TOKEN not in task_run.task_log
    assert TOKEN not in _log_file(harness, "fetch")


def test_a_crashed_task_process_has_its_log_file_masked_by_the_supervisor(secret_project: Harness) -> None:
    harness = secret_project
    harness.pipeline("p", [TaskSpec("crash", parameters={"SCRIPT_NAME": "killed.py"})])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 1
    attempt = harness.attempts("crash")[0]
    assert attempt.error_message == "the task process was killed by signal SIGKILL before recording an outcome"
    log_file = _log_file(harness, "crash")
    assert "straight into the file: ***" in log_file
    assert TOKEN not in log_file
    task_log = harness.task_runs()["crash"].task_log
    assert "straight into the file: ***" in task_log
    assert TOKEN not in task_log
