"""Backup and restore of a running Engine DB (S6.G): a pg_dump, or SQLite's online backup, taken
while a pipeline runs, restored, checked with doctor, reconciled, and the interrupted run finished
with nothing lost or done twice."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess

import pytest

from etl_craft.engine.schema import tables as t
from etl_craft.execution.processes.identity import descendants
from tests.fixtures import postgres as pg
from tests.fixtures.harness import Harness, TaskSpec
from tests.fixtures.project import Project

pytestmark = pytest.mark.timeout(300)


def _backup(project: Project) -> object:
    """The Engine DB's backup as the operations guide does it: pg_dump -Fc, or the online backup."""
    if project.dialect == "postgresql":
        dump = project.root / "engine.dump"
        subprocess.run(
            ["pg_dump", "-h", pg.PG_HOST, "-p", str(pg.PG_PORT), "-U", pg.PG_USER, "-Fc", "-f", str(dump), project.pg_database],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        return dump
    copy = project.root / "engine.backup.db"
    with sqlite3.connect(project.root / "engine.db") as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return copy


def _restore(project: Project, backup: object) -> str | None:
    """Into a new database (PostgreSQL), or in place of the file (SQLite); the config follows."""
    if project.dialect == "postgresql":
        restored = pg.create_database()
        subprocess.run(
            ["pg_restore", "-h", pg.PG_HOST, "-p", str(pg.PG_PORT), "-U", pg.PG_USER, "--no-owner", "-d", restored, str(backup)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        project.pg_database = restored
        project.write_config()
        return restored
    for suffix in ("", "-wal", "-shm"):
        (project.root / f"engine.db{suffix}").unlink(missing_ok=True)
    os.replace(str(backup), project.root / "engine.db")
    return None


def test_a_backup_taken_during_a_run_restores_and_the_run_finishes(harness: Harness) -> None:
    release = harness.root / "release-b"
    harness.pipeline("nightly", [TaskSpec("a"), TaskSpec("b", {"wait_for": str(release)})], [("b", "a", "SUCCESS")])
    running = harness.start("run", "--pipeline_code", "nightly")
    harness.wait_for_attempt("b", "RUNNING", 120)
    backup = _backup(harness.project)

    # The host is lost after the backup: the run's processes die with it.
    for pid in [*descendants(running.pid), running.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    running.wait(60)
    restored = _restore(harness.project, backup)
    try:
        harness.db = harness.project.open_db()
        release.write_text("go")
        doctor = harness.cli("doctor")
        assert "Engine DB tables and migrations" in doctor.stdout, doctor
        assert "[FAIL" not in doctor.stdout, doctor
        reconciled = harness.cli("reconcile", "--format", "json")
        assert reconciled.returncode == 0, reconciled
        lost = reconciled.json()["lost"]
        assert [(x["task_code"], x["pipeline_code"]) for x in lost] == [("b", "nightly")]

        finished = harness.cli("run", "--pipeline_code", "nightly")
        assert finished.returncode == 0, finished
        runs = harness.runs()
        assert [(r.status, r.trigger_kind) for r in runs] == [("SUCCESS", "MANUAL")]  # the same run, once
        by_task = harness.task_runs(runs[0].pipeline_run_id)
        assert {code: r.status for code, r in by_task.items()} == {"a": "SUCCESS", "b": "SUCCESS"}
        assert [a.status for a in harness.attempts("a")] == ["SUCCESS"]  # not run again
        assert [(a.attempt_number, a.status) for a in harness.attempts("b")] == [(1, "LOST"), (2, "SUCCESS")]
        assert [r.command for r in harness.rows(t.aud_actions, order_by=t.aud_actions.c.action_id)][-2:] == [
            "reconcile",
            "run",
        ]
    finally:
        if restored is not None:
            harness.db.dispose()
            pg.drop_database(restored)
