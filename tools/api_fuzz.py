"""schemathesis against a real `etl-craft server --api-only` (the `api_fuzz` nox session).

Builds a throwaway SQLite project with one pipeline (paused, so a generated run control changes
nothing lasting) and an admin token, serves it on a free port, runs schemathesis over the served
OpenAPI description (positive and negative data, every check: no 500, responses within their
documented schemas and status codes), then stops the server and fails if its log holds a traceback.

    uv run --frozen python -m tools.api_fuzz [--max-examples N]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent
PIPELINE = """\
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('sales', 'Sales', 'FULL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT 'extract', 'ETL', PIPELINE_ID, 'PYTHON' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'sales';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT TASK_ID, 'SCRIPT_NAME', 'extract.py' FROM CFG_TASKS WHERE TASK_CODE = 'extract';
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _etl_craft(root: Path, *args: str) -> str:
    done = subprocess.run([str(BIN / "etl-craft"), *args], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"etl-craft {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def _project(root: Path, port: int) -> str:
    (root / "craft-connector.yml").write_text(
        "Orchestration:\n  Mode: local\n"
        f"  Api_address: 127.0.0.1:{port}\n"
        "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n  schema: main\n",
        encoding="utf-8",
    )
    (root / "migrations").mkdir()
    (root / "migrations" / "0001_sales.sql").write_text(PIPELINE, encoding="utf-8")
    (root / "ingestion_scripts").mkdir()
    (root / "ingestion_scripts" / "extract.py").write_text("def run(task):\n    return None\n", encoding="utf-8")
    _etl_craft(root, "init-db")
    _etl_craft(root, "migrate")
    _etl_craft(root, "pause", "--pipeline_code", "sales", "--reason", "fuzzing the API")
    # An admin, so the token and user endpoints are fuzzed too; a name no generated body will revoke.
    return _etl_craft(root, "token", "create", "--name", "fuzz-admin-5b1e9c", "--role", "admin").splitlines()[0]


def _wait_until_serving(base: str, token: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/api/v1/health", headers={"Authorization": f"Bearer {token}"}).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit("the API did not start within 60 s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.api_fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=25, help="examples per operation (default 25)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="etl-craft-api-fuzz-") as folder:
        root = Path(folder)
        port = _free_port()
        token = _project(root, port)
        base = f"http://127.0.0.1:{port}"
        log = (root / "server.log").open("w+", encoding="utf-8")
        server = subprocess.Popen(
            [str(BIN / "etl-craft"), "server", "--api-only"], cwd=root, stdout=log, stderr=log, env=dict(os.environ)
        )
        try:
            _wait_until_serving(base, token)
            fuzz = subprocess.run(
                [
                    str(BIN / "schemathesis"),
                    "run",
                    f"{base}/api/v1/openapi.json",
                    "--header",
                    f"Authorization: Bearer {token}",
                    "--max-examples",
                    str(args.max_examples),
                    "--checks",
                    "all",
                    "--exclude-checks",
                    "ignored_auth",  # health and every endpoint need a token; schemathesis can't tell
                ],
                check=False,
            )
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
        log.seek(0)
        server_log = log.read()
        if "Traceback" in server_log:
            print(server_log)
            print("the server logged a traceback")
            return 1
    return fuzz.returncode


if __name__ == "__main__":
    raise SystemExit(main())
