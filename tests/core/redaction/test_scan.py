"""The scan: no sensitive parameter value reaches any output of a real project (S7.C).

A PYTHON task gets a sensitive parameter and INPUT_PARAMS with sensitive keys, and its script prints,
logs, returns and raises them. Then every command that shows a task (`run`, `steps`, `status`, `explain`,
`history`, `audit`, in text and JSON, at DEBUG) is run, and its output, every attempt log file and
every TASK_LOG and error message in the Engine DB are searched for the values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.fixtures.aws import SecretsManager
from tests.fixtures.cli import Result
from tests.fixtures.harness import Harness, TaskSpec

API_TOKEN = "tok-7c1e9a0b5d3f"
API_KEY = "key-94b2e6d1c8a0"
PASSWORD = "pw-3f8a1c6e2b9d"
ROTATED = "tok-2d9f4b7a1e6c"  # API_TOKEN of fetch after a project migration changes it
SECRETS = (API_TOKEN, API_KEY, PASSWORD, ROTATED)

SCRIPT = """\
import os
import signal

from etl_craft.scripting import ScriptResult


def run(task):
    token = task.task_params["API_TOKEN"]
    key = task.input_params["api_key"]
    password = task.input_params["auth"]["password"]
    print("printed:", token, key, password)
    task.logger.info("calling https://api.example.com/orders?token=%s with key %s", token, key)
    task.logger.debug("logging in as %s / %s", task.input_params["auth"]["user"], password)
    print("the task:", task)
    mode = task.input_params.get("mode")
    if mode == "fail":
        raise RuntimeError(f"the API refused token {token} and key {key}")
    if mode == "crash":
        # Straight into the log file, past the task process's masking pipe (as a crashed writer's
        # output would be), then a hard crash: the supervisor masks the file.
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.endswith(".attempt-1.log"):
                with open(target, "a") as log:
                    log.write(f"straight into the file: {token} {key} {password}\\n")
        os.kill(os.getpid(), signal.SIGKILL)
    return ScriptResult(row_count=1, variables={"USED_TOKEN": token, "REGION": task.task_params["REGION"]})
"""


def task(code: str, mode: str | None = None) -> TaskSpec:
    params = {"client": "acme", "api_key": API_KEY, "auth": {"user": "etl", "password": PASSWORD}}
    if mode:
        params["mode"] = mode
    return TaskSpec(
        code,
        params,
        parameters={"SCRIPT_NAME": "leaky.py", "API_TOKEN": API_TOKEN, "REGION": "eu-west-1"},
    )


def engine_texts(harness: Harness) -> list[str]:
    """Every TASK_LOG and error message stored, and every recorded request's arguments."""
    texts: list[str] = []
    with harness.db.read() as conn:
        for table in (t.aud_task_run_log, t.aud_task_attempts):
            for row in conn.execute(sa.select(table.c.task_log, table.c.error_message)):
                texts += [row.task_log or "", row.error_message or ""]
        texts += [json.dumps(a) for a in conn.execute(sa.select(t.aud_actions.c.arguments)).scalars()]
    return texts


def scan(harness: Harness, outputs: list[Result]) -> None:
    logs = sorted((harness.root / "logs").rglob("*.log"))
    assert len(logs) == 3, logs
    texts = [r.stdout for r in outputs] + [r.stderr for r in outputs]
    texts += [path.read_text() for path in logs] + engine_texts(harness)
    for secret in SECRETS:
        leaks = [text for text in texts if secret in text]
        assert not leaks, f"{secret} found in:\n" + "\n---\n".join(leaks)


def test_no_sensitive_parameter_value_reaches_any_output(harness: Harness) -> None:
    (harness.root / "ingestion_scripts" / "leaky.py").write_text(SCRIPT)
    harness.pipeline("p", [task("fetch"), task("broken", "fail"), task("crashed", "crash")])
    ran = harness.cli("--log-level", "DEBUG", "run", "--pipeline_code", "p")
    assert ran.returncode == 1, ran
    runs = harness.task_runs()
    assert {code: r.status for code, r in runs.items()} == {"fetch": "SUCCESS", "broken": "FAILED", "crashed": "FAILED"}

    harness.migrate(
        f"UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{ROTATED}' WHERE PARAMETER_NAME = 'API_TOKEN'"
        " AND TASK_ID = (SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = 'fetch');\n"
    )
    outputs = [ran]
    for fmt in ("text", "json"):
        common = ("--log-level", "DEBUG", "--format", fmt)
        outputs.append(harness.cli(*common, "steps", "--pipeline_code", "p", "--run-id", "1"))
        outputs.append(harness.cli(*common, "status", "--pipeline_code", "p", "--run-id", "1"))
        outputs.append(harness.cli(*common, "history", "--pipeline_code", "p", "--task_code", "broken"))
        outputs.append(harness.cli(*common, "audit"))
        for code in ("fetch", "broken", "crashed"):
            outputs.append(
                harness.cli(*common, "explain", "--pipeline_code", "p", "--task_code", code, "--run-id", "1")
            )
    assert [r.returncode for r in outputs[1:]] == [0] * (len(outputs) - 1), [str(r) for r in outputs]
    scan(harness, outputs)

    # Where the values were, *** is: the test looks at the places that would have held them.
    fetch_log = Path(harness.attempts("fetch")[0].log_path).read_text()
    assert "printed: *** *** ***" in fetch_log
    assert "calling https://api.example.com/orders?token=*** with key ***" in fetch_log
    assert "logging in as etl / ***" in fetch_log
    assert "USED_TOKEN = ***" in runs["fetch"].task_log and "REGION = eu-west-1" in runs["fetch"].task_log
    assert "the API refused token *** and key ***" in runs["broken"].error_message
    assert "straight into the file: *** *** ***" in runs["crashed"].task_log  # masked by the supervisor
    assert [line.split() for line in outputs[1].stdout.splitlines() if "API_TOKEN" in line] == [
        [code, "API_TOKEN", "***"] for code in ("broken", "crashed", "fetch")
    ]
    steps = json.loads(outputs[len(outputs) // 2 + 1].stdout)
    fetch = next(s for s in steps["steps"] if s["task_code"] == "fetch")
    assert fetch["parameters"]["API_TOKEN"] == "***"
    assert fetch["parameters"]["REGION"] == "eu-west-1"
    assert json.loads(fetch["parameters"]["INPUT_PARAMS"]) == {
        "client": "acme",
        "api_key": "***",
        "auth": {"user": "etl", "password": "***"},
    }
    audit = json.loads(outputs[len(outputs) // 2 + 4].stdout)
    changes = [c for c in audit["metadata_changes"] if c["table_name"] == "CFG_TASK_PARAMETERS"]
    inserted = [c["after"] for c in changes if c["operation"] == "INSERT"]
    assert {c["PARAMETER_NAME"]: c["PARAMETER_VALUE"] for c in inserted if c["PARAMETER_NAME"] != "INPUT_PARAMS"} == {
        "SCRIPT_NAME": "leaky.py",
        "API_TOKEN": "***",
        "REGION": "eu-west-1",
    }
    (rotated,) = [c for c in changes if c["operation"] == "UPDATE"]
    assert (rotated["before"]["PARAMETER_VALUE"], rotated["after"]["PARAMETER_VALUE"]) == ("***", "*** (changed)")
    audit_text = outputs[4].stdout
    assert "CFG_TASK_PARAMETERS\t" in audit_text and '{"PARAMETER_VALUE":"*** (changed)"' in audit_text


@pytest.mark.parametrize("patterns", ["[]", "['*_PIN']"])
def test_patterns_written_replace_the_defaults(harness: Harness, patterns: str) -> None:
    harness.project.extra_sections = f"Redaction:\n  Sensitive_patterns: {patterns}\n"
    harness.project.write_config()
    harness.pipeline(
        "p", [TaskSpec("t", {"api_key": API_KEY}, parameters={"API_TOKEN": API_TOKEN, "CARD_PIN": "1234"})]
    )
    steps = harness.cli("steps", "--pipeline_code", "p", "--format", "json").json()
    shown = steps["steps"][0]["parameters"]
    assert shown["API_TOKEN"] == API_TOKEN  # no longer a sensitive name
    assert json.loads(shown["INPUT_PARAMS"]) == {"api_key": API_KEY}
    assert shown["CARD_PIN"] == ("1234" if patterns == "[]" else "***")


PROVIDED = "sm-vendor-token-8e2c4a6f1b"  # read by the script from Secrets Manager
DOCS = "sm-docs-token-3a5c7e9b0d"  # Docs_site.Authtoken, resolved when the config loads

VENDOR_SCRIPT = """\
from etl_craft.scripting import ScriptResult


def run(task):
    token = task.config.secret("VENDOR_TOKEN")
    print("vendor token:", token, "docs token:", task.config.secret("DOCS_TOKEN"))
    task.logger.info("GET https://vendor.example.com/feed?token=%s", token)
    if task.input_params.get("fail"):
        raise RuntimeError(f"the vendor refused {token}")
    return ScriptResult(row_count=1, variables={"VENDOR": token})
"""


def test_a_secret_from_secrets_manager_never_appears(harness: Harness, secrets_manager: SecretsManager) -> None:
    secrets_manager.put("VENDOR_TOKEN", PROVIDED)
    secrets_manager.put("DOCS_TOKEN", DOCS)
    harness.project.secrets = secrets_manager.section(Cache_seconds=60)
    harness.project.extra_sections = "Docs_site:\n  Authtoken: DOCS_TOKEN\n"
    harness.project.write_config()
    (harness.root / "ingestion_scripts" / "vendor.py").write_text(VENDOR_SCRIPT)
    vendor = {"SCRIPT_NAME": "vendor.py"}
    harness.pipeline("v", [TaskSpec("feed", parameters=vendor), TaskSpec("refused", {"fail": 1}, parameters=vendor)])
    ran = harness.cli("--log-level", "DEBUG", "run", "--pipeline_code", "v")
    assert ran.returncode == 1, ran
    runs = harness.task_runs()
    assert (runs["feed"].status, runs["refused"].status) == ("SUCCESS", "FAILED")
    outputs = [ran]
    for fmt in ("text", "json"):
        common = ("--log-level", "DEBUG", "--format", fmt)
        outputs.append(harness.cli(*common, "steps", "--pipeline_code", "v", "--run-id", "1"))
        outputs.append(harness.cli(*common, "status", "--pipeline_code", "v", "--run-id", "1"))
        outputs.append(
            harness.cli(*common, "explain", "--pipeline_code", "v", "--task_code", "refused", "--run-id", "1")
        )
        outputs.append(harness.cli(*common, "doctor"))
    assert all(r.returncode in (0, 1) for r in outputs), [str(r) for r in outputs]
    logs = sorted((harness.root / "logs").rglob("*.log"))
    texts = [r.stdout for r in outputs] + [r.stderr for r in outputs] + [p.read_text() for p in logs]
    texts += engine_texts(harness)
    for secret in (PROVIDED, DOCS):
        leaks = [text for text in texts if secret in text]
        assert not leaks, f"{secret} found in:\n" + "\n---\n".join(leaks)
    feed_log = Path(harness.attempts("feed")[0].log_path).read_text()
    assert "vendor token: *** docs token: ***" in feed_log
    assert "GET https://vendor.example.com/feed?token=***" in feed_log
    assert "VENDOR = ***" in runs["feed"].task_log
    assert "the vendor refused ***" in runs["refused"].error_message
    doctor = outputs[4].stdout
    assert "secret variable(s) set in AWS Secrets Manager (region eu-west-1, at http://127.0.0.1:" in doctor
