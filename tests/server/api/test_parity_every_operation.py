"""Every endpoint against the CLI command it stands for, generated from ENDPOINTS: a read returns the
same document as `--format json` for the same Engine DB state; a write, done once over the API and
once through the CLI from an equivalent state, returns the same document but for what must differ
(new ids, times, the actor's name, the new row's name), which is replaced before comparing.

The two endpoints without a command (`health` and `workers`) are compared with nothing: they say so.
No answer (but the new token's value in the answer to creating it) and no log record carries a
token, a password or a sensitive task parameter's value.
"""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Callable
from typing import Any

import pytest

from etl_craft_server.api.routes import ENDPOINTS
from tests.server.api.conftest import SECRET

P = "/api/v1/projects/default"
T = "/api/v1/projects/{project}"  # the paths as ENDPOINTS names them
R = T + "/pipelines/{pipeline_code}/runs/{run_id}"
NO_COMMAND = {("GET", "/api/v1/health"), ("GET", "/api/v1/workers")}
# Fields a write sets from its moment, its new rows and its caller: equal shape, not equal value.
VOLATILE = re.compile(
    r".*(_at|_date|_id|_by|_by_kind)$|run_key|pid|host|value|duration_seconds|log_path|process_start|name"
)


def normalized(doc: Any, names: tuple[str, ...]) -> Any:
    """The document with volatile fields replaced by their type, and in text every number and every
    name in `names` (actors, run keys, token names) replaced by a placeholder."""
    if isinstance(doc, dict):
        return {
            key: type(value).__name__ if VOLATILE.fullmatch(key) and value is not None else normalized(value, names)
            for key, value in doc.items()
        }
    if isinstance(doc, list):
        return [normalized(item, names) for item in doc]
    if isinstance(doc, str):
        for name in names:
            doc = doc.replace(name, "<name>")
        return re.sub(r"\d+(\.\d+)?", "N", doc)
    return doc


def _ok(response) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.text
    return response.json()


def _new_run(api, key: str) -> int:  # type: ignore[no-untyped-def]
    return api.cli("run", "--pipeline_code", "sales", "--init-only", "--run-key", key)["run"]["pipeline_run_id"]


def _finished_run(api, key: str) -> int:  # type: ignore[no-untyped-def]
    run_id = _new_run(api, key)
    assert api.cli("run", "--pipeline_code", "sales", "--run-id", str(run_id))["status"] == "SUCCESS"
    return run_id


def _user_cli(api, monkeypatch, password: str, *args: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "stdin", io.StringIO(password + "\n"))
    return api.cli("user", *args)


Pair = tuple[dict[str, Any], dict[str, Any]]


def reads(api, _monkeypatch) -> dict[tuple[str, str], Pair]:  # type: ignore[no-untyped-def]
    run_id = _finished_run(api, "read")
    status = api.cli("status", "--pipeline_code", "sales", "--run-id", str(run_id))
    [extract] = [t for t in status["tasks"] if t["task_code"] == "extract"]
    task_run_id, attempt_id = extract["task_run_id"], extract["attempts"][0]["attempt_id"]
    run = str(run_id)
    cases = {
        "/pipelines": ({}, ["list"]),
        "/pipelines/{pipeline_code}": ({}, ["steps", "--pipeline_code", "sales"]),
        "/pipelines/{pipeline_code}/graph": ({}, ["graph", "--pipeline_code", "sales"]),
        "/pipelines/{pipeline_code}/runs": ({"limit": 5}, ["history", "--pipeline_code", "sales", "--limit", "5"]),
        "/pipelines/{pipeline_code}/runs/{run_id}": ({}, ["status", "--pipeline_code", "sales", "--run-id", run]),
        "/pipelines/{pipeline_code}/runs/{run_id}/steps": ({}, ["steps", "--pipeline_code", "sales", "--run-id", run]),
        "/pipelines/{pipeline_code}/runs/{run_id}/tasks/{task_code}/explain": (
            {},
            ["explain", "--pipeline_code", "sales", "--task_code", "load", "--run-id", run],
        ),
        "/task-runs/{task_run_id}": ({}, ["task-run", "--task-run-id", str(task_run_id)]),
        "/attempts/{attempt_id}": ({}, ["attempt", "--attempt-id", str(attempt_id)]),
        "/attempts/{attempt_id}/log": (
            {"offset": 3},
            ["attempt-log", "--attempt-id", str(attempt_id), "--offset", "3"],
        ),
        "/audit": ({"pipeline_code": "sales"}, ["audit", "--pipeline_code", "sales"]),
        "/validate": ({}, ["validate"]),
    }
    pairs = {}
    for path, (params, command) in cases.items():
        concrete = path.replace("{pipeline_code}", "sales").replace("{run_id}", run).replace("{task_code}", "load")
        concrete = concrete.replace("{task_run_id}", str(task_run_id)).replace("{attempt_id}", str(attempt_id))
        pairs[("GET", T + path)] = (_ok(api.get(P + concrete, **params)), api.cli(*command))
    # This project has no Warehouse section: lineage is refused alike (the API adds remedy and status).
    refusal = api.get(f"{P}/lineage")
    assert refusal.status_code == 409, refusal.text
    pairs[("GET", T + "/lineage")] = (
        {k: v for k, v in refusal.json().items() if k not in ("remedy", "http_status")},
        api.cli("lineage", refused=True),
    )
    # /status shows the pipeline's one unfinished run: open one for it.
    open_run = _new_run(api, "open")
    pairs[("GET", T + "/pipelines/{pipeline_code}/status")] = (
        _ok(api.get(f"{P}/pipelines/sales/status")),
        api.cli("status", "--pipeline_code", "sales"),
    )
    api.cli("cancel", "--pipeline_code", "sales", "--run-id", str(open_run), "--reason", "done reading")
    pairs[("GET", "/api/v1/tokens")] = (_ok(api.get("/api/v1/tokens", kind="admin")), api.cli("token", "list"))
    return pairs


def pipeline_writes(api, _monkeypatch) -> dict[tuple[str, str], Pair]:  # type: ignore[no-untyped-def]
    path = T + "/pipelines/{pipeline_code}"
    pause = _ok(api.post(f"{P}/pipelines/sales/pause", {"reason": "maintenance"}))
    resume = _ok(api.post(f"{P}/pipelines/sales/resume", {"reason": "done"}))
    pairs = {
        ("POST", path + "/pause"): (pause, api.cli("pause", "--pipeline_code", "sales", "--reason", "maintenance")),
        ("POST", path + "/resume"): (resume, api.cli("resume", "--pipeline_code", "sales", "--reason", "done")),
    }
    over_api = _ok(
        api.post(f"{P}/pipelines/sales/backfills", {"first": "2026-01-01", "last": "2026-01-02", "reason": "b"})
    )
    by_cli = api.cli("run", "--pipeline_code", "sales", "--backfill", "2026-01-01:2026-01-02", "--reason", "b")
    pairs[("POST", path + "/backfills")] = (over_api, by_cli)
    return pairs


def run_writes(api, _monkeypatch) -> dict[tuple[str, str], Pair]:  # type: ignore[no-untyped-def]
    """Run a (API) and run b (CLI) go through the same states, one after the other."""
    sales = ["--pipeline_code", "sales"]
    created_a = _ok(api.post(f"{P}/pipelines/sales/runs", {"run_key": "api-1"}))
    a = created_a["run"]["pipeline_run_id"]
    cancel_a = _ok(api.post(f"{P}/pipelines/sales/runs/{a}/cancel", {"reason": "wrong day"}))
    created_b = api.cli("run", *sales, "--init-only", "--run-key", "cli-1")
    b = str(created_b["run"]["pipeline_run_id"])
    cancel_b = api.cli("cancel", *sales, "--run-id", b, "--reason", "wrong day")

    reopen_a = _ok(api.post(f"{P}/pipelines/sales/runs/{a}/reopen", {"reason": "repair"}))
    mark = {"status": "FAILED", "reason": "bad data", "task_code": "extract"}
    mark_a = _ok(api.post(f"{P}/pipelines/sales/runs/{a}/mark", mark))
    api.cli("cancel", *sales, "--run-id", str(a), "--reason", "next")
    reopen_b = api.cli("reopen", *sales, "--run-id", b, "--reason", "repair")
    marking = ["--task_code", "extract", "--status", "FAILED", "--reason", "bad data"]
    mark_b = api.cli("mark", *sales, "--run-id", b, *marking)
    api.cli("cancel", *sales, "--run-id", b, "--reason", "next")

    api.cli("reopen", *sales, "--run-id", str(a), "--reason", "repair")
    repair_a = _ok(api.post(f"{P}/pipelines/sales/runs/{a}/repair", {}))
    api.cli("reopen", *sales, "--run-id", b, "--reason", "repair")
    repair_b = api.cli("run", *sales, "--run-id", b, "--force")

    rerun_a = _ok(
        api.post(f"{P}/pipelines/sales/runs/{a}/tasks/extract/rerun", {"reason": "resent", "with_downstream": True})
    )
    rerunning = ["--task_code", "extract", "--rerun", "--with-downstream", "--reason", "resent"]
    rerun_b = api.cli("run", *sales, "--run-id", b, *rerunning)
    return {
        ("POST", T + "/pipelines/{pipeline_code}/runs"): (created_a, created_b),
        ("POST", R + "/cancel"): (cancel_a, cancel_b),
        ("POST", R + "/reopen"): (reopen_a, reopen_b),
        ("POST", R + "/mark"): (mark_a, mark_b),
        ("POST", R + "/repair"): (repair_a, repair_b),
        ("POST", R + "/tasks/{task_code}/rerun"): (rerun_a, rerun_b),
    }


def admin_writes(api, monkeypatch) -> dict[tuple[str, str], Pair]:  # type: ignore[no-untyped-def]
    token_a = _ok(api.post("/api/v1/tokens", {"name": "p-api", "role": "viewer", "expires": "30d"}, kind="admin"))
    token_b = api.cli("token", "create", "--name", "p-cli", "--role", "viewer", "--expires", "30d")
    revoke_a = _ok(api.post(f"/api/v1/tokens/{token_a['token']['token_id']}/revoke", None, kind="admin"))
    revoke_b = api.cli("token", "revoke", "--token-id", str(token_b["token"]["token_id"]))
    password = PASSWORD
    user = {"role": "viewer", "password": password}
    user_a = _ok(api.post("/api/v1/users", {"name": "u-api", **user}, kind="admin"))
    user_b = _user_cli(api, monkeypatch, password, "create", "--name", "u-cli", "--role", "viewer")
    passwd_a = _ok(api.post("/api/v1/users/passwd", {"name": "u-api", "password": password + "!"}, kind="admin"))
    passwd_b = _user_cli(api, monkeypatch, password + "!", "passwd", "--name", "u-cli")
    disable_a = _ok(api.post("/api/v1/users/disable", {"name": "u-api"}, kind="admin"))
    disable_b = api.cli("user", "disable", "--name", "u-cli")
    return {
        ("POST", "/api/v1/tokens"): (token_a, token_b),
        ("POST", "/api/v1/tokens/{token_id}/revoke"): (revoke_a, revoke_b),
        ("POST", "/api/v1/users"): (user_a, user_b),
        ("POST", "/api/v1/users/passwd"): (passwd_a, passwd_b),
        ("POST", "/api/v1/users/disable"): (disable_a, disable_b),
    }


GROUPS: list[Callable[..., dict[tuple[str, str], Pair]]] = [reads, pipeline_writes, run_writes, admin_writes]
PASSWORD = "a passphrase of parity"
NAMES = ("operator-token", "admin-token", "p-api", "p-cli", "u-api", "u-cli", "api-1", "cli-1")


def test_every_endpoint_returns_its_commands_document(
    fresh_api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    api = fresh_api
    monkeypatch.setenv("ETL_CRAFT_ACTOR", "parity-cli")
    caplog.set_level(logging.DEBUG)
    pairs: dict[tuple[str, str], Pair] = {}
    for group in GROUPS:
        pairs.update(group(api, monkeypatch))
    secrets = [SECRET, PASSWORD, PASSWORD + "!", *api.tokens.values()]
    for (method, path), (over_api, _by_cli) in pairs.items():
        shown = json.dumps(over_api, ensure_ascii=False)
        assert not [s for s in secrets if s in shown], f"{method} {path} shows a secret"
    assert not [s for s in secrets if s in caplog.text], "a log record carries a secret"
    assert set(pairs) | NO_COMMAND == {(e.method, e.path) for e in ENDPOINTS}
    names = (*NAMES, "parity-cli")
    for (method, path), (over_api, by_cli) in pairs.items():
        assert over_api["schema"] == by_cli["schema"], f"{method} {path}"
        if method == "GET":
            assert over_api == by_cli, f"{method} {path}"
        else:
            assert normalized(over_api, names) == normalized(by_cli, names), f"{method} {path}"
