"""The real `etl-craft server` serves the API on Orchestration.Api_address beside its overseer (a
run created over HTTP by `ci-bot` is run by the overseer), and `--api-only` serves it alone."""

from __future__ import annotations

import signal
import socket

import httpx
import pytest

from etl_craft.cli.main import main
from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, TaskSpec

pytestmark = pytest.mark.sqlite


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _token(harness: Harness, name: str, role: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["token", "create", "--name", name, "--role", role, "--config", str(harness.project.config_path)]) == 0
    value = capsys.readouterr().out.splitlines()[0]
    assert value.startswith("ecft_")
    return value


def _answering(harness: Harness, url: str, token: str) -> httpx.Response:
    def ready() -> httpx.Response | None:
        try:
            return httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=5)
        except httpx.TransportError:
            return None

    return harness.wait_until(ready, 60, f"the API at {url}")


@pytest.fixture
def served(harness: Harness) -> tuple[Harness, str]:
    port = _free_port()
    harness.project.orchestration = f"  Mode: local\n  Api_address: 127.0.0.1:{port}\n"
    harness.project.write_config()
    harness.pipeline("sales", [TaskSpec("extract"), TaskSpec("load")], [("load", "extract", "SUCCESS")])
    return harness, f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("dialect", ["sqlite"], indirect=True)
def test_the_server_runs_a_run_created_over_http(served, capsys) -> None:
    harness, base = served
    token = _token(harness, "ci-bot", "operator", capsys)
    server = harness.start("server")
    health = _answering(harness, f"{base}/api/v1/health", token)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    created = httpx.post(
        f"{base}/api/v1/projects/default/pipelines/sales/runs",
        json={"run_key": "from-ci"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert created.status_code == 200, created.text
    run_id = created.json()["run"]["pipeline_run_id"]
    harness.wait_until(lambda: harness.runs()[-1].status == "SUCCESS", 90, "the overseer to finish the run")
    server.signal(signal.SIGTERM)
    result = server.wait(60)
    assert result.returncode == 0, str(result)
    [run] = harness.runs()
    assert (run.pipeline_run_id, run.run_key, run.started_by, run.status) == (run_id, "from-ci", "ci-bot", "SUCCESS")
    assert {code: r.status for code, r in harness.task_runs(run_id).items()} == {
        "extract": "SUCCESS",
        "load": "SUCCESS",
    }
    assert token not in result.stderr and "Traceback" not in result.stderr
    assert f"HTTP API on http://{base.removeprefix('http://')}/api/v1" in result.stderr


@pytest.mark.parametrize("dialect", ["sqlite"], indirect=True)
def test_api_only_serves_without_an_overseer(served, capsys) -> None:
    harness, base = served
    token = _token(harness, "reader", "viewer", capsys)
    server = harness.start("server", "--api-only")
    listed = _answering(harness, f"{base}/api/v1/projects/default/pipelines", token)
    assert [p["pipeline_code"] for p in listed.json()["pipelines"]] == ["sales"]
    server.signal(signal.SIGTERM)
    result = server.wait(60)
    assert result.returncode == 0, str(result)
    assert harness.rows(t.aud_overseers) == []


@pytest.mark.parametrize("dialect", ["sqlite"], indirect=True)
def test_an_address_in_use_stops_the_server_before_its_overseer(harness: Harness) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        harness.project.orchestration = f"  Mode: local\n  Api_address: 127.0.0.1:{port}\n"
        harness.project.write_config()
        result = harness.cli("server", timeout=60)
    assert result.returncode == 3, str(result)
    assert f"Orchestration.Api_address: found 127.0.0.1:{port}, where the API could not listen" in result.stderr
    assert harness.runs() == []
