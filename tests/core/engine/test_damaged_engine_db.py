"""An Engine DB that is missing, read-only, immutable, locked, damaged or stripped of a guard: one
clear line and a documented exit status from every command, no new file, and doctor says what it is."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from etl_craft.engine.schema import tables as t
from tests.fixtures import postgres as pg
from tests.fixtures.cli import run_cli
from tests.fixtures.harness import Harness, TaskSpec

SQLITE = [pytest.param("sqlite", marks=pytest.mark.sqlite, id="sqlite")]
POSTGRES = [pytest.param("postgresql", marks=pytest.mark.postgres, id="postgres")]


def _one_clear_line(result, status: int, *named: str) -> None:
    assert result.returncode == status, result
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    for text in named:
        assert text in errors[0], errors[0]


def _engine_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name in ("engine.db", "engine.db-wal", "engine.db-shm"))


@pytest.mark.parametrize("dialect", SQLITE, indirect=True)
@pytest.mark.parametrize("command", [["list"], ["doctor"], ["status", "--pipeline_code", "p"], ["migrate"]])
def test_a_missing_engine_db_file_is_not_created_by_any_command(empty_project, command: list[str]) -> None:
    result = run_cli(*command, env=empty_project.env())
    database = empty_project.root / "engine.db"
    if command == ["doctor"]:
        assert result.returncode == 1, result
        assert f"[FAIL] Engine DB connection: the Engine DB {database}" in result.stdout
        assert "etl-craft init-db" in result.stdout
    else:
        _one_clear_line(result, 3, str(database), "found no such file", "etl-craft init-db")
    assert _engine_files(empty_project.root) == []


@pytest.mark.parametrize("dialect", SQLITE, indirect=True)
def test_a_task_process_started_after_the_engine_db_vanished_creates_no_new_one(harness: Harness) -> None:
    """Processes that had the file open go on writing to it (as SQLite does with an unlinked file); the
    task process of the next task opens it afresh, finds nothing and stops, instead of starting an
    empty Engine DB whose history is "gone"."""
    harness.pipeline("p", [TaskSpec("a", {"sleep": 4}), TaskSpec("b")], [("b", "a", "SUCCESS")])
    running = harness.start("run", "--pipeline_code", "p")
    harness.wait_for_attempt("a", "RUNNING")
    harness.db.dispose()
    for name in _engine_files(harness.root):
        (harness.root / name).unlink()
    result = running.wait(120)
    assert "Traceback" not in result.stderr, result.stderr
    assert "p.b: attempt 1 FAILED" in result.stdout, result
    assert _engine_files(harness.root) == [], "a process created an empty Engine DB"


@contextmanager
def _immutable(path: Path) -> Iterator[None]:
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(
            f"chattr +i is not permitted here ({made.stderr.strip()}), so nothing can make a file read-only to root"
        )
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("dialect", SQLITE, indirect=True)
def test_an_immutable_engine_db_is_one_clear_error_and_doctor_fails(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    database = harness.root / "engine.db"
    harness.db.dispose()
    with _immutable(database):
        paused = harness.cli("pause", "--pipeline_code", "p", "--reason", "maintenance")
        listed = harness.cli("list")
        doctor = harness.cli("doctor")
    _one_clear_line(paused, 12, f"the Engine DB {database}", "read-only or immutable", "chattr -i")
    assert listed.returncode == 0 and listed.stdout.splitlines()[1].startswith("p\t"), listed  # reads still work
    assert doctor.returncode == 1
    assert f"[FAIL] Engine DB file: the Engine DB {database}: found a file (or folder) it can't write" in doctor.stdout
    assert harness.rows(t.aud_pipeline_pauses) == []


@pytest.mark.parametrize("dialect", SQLITE, indirect=True)
def test_a_corrupt_engine_db_is_one_clear_error_and_doctor_fails(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    database = harness.root / "engine.db"
    harness.db.dispose()
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(database.read_bytes())
    data[:16] = b"not a database!!"
    database.write_bytes(bytes(data))
    listed = harness.cli("list")
    _one_clear_line(listed, 12, f"the Engine DB {database}", "not a SQLite database", "Restore")
    doctor = harness.cli("doctor")
    assert doctor.returncode == 1
    assert "not a SQLite database" in doctor.stdout


@pytest.mark.parametrize("dialect", SQLITE, indirect=True)
def test_damaged_pages_are_found_by_doctor(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    database = harness.root / "engine.db"
    harness.db.dispose()
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root_page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'CFG_PIPELINES'").fetchone()[0]
    data = bytearray(database.read_bytes())
    start = (root_page - 1) * page_size
    data[start : start + page_size] = b"\xff" * page_size  # the table's b-tree page, overwritten
    database.write_bytes(bytes(data))
    doctor = harness.cli("doctor")
    assert doctor.returncode == 1, doctor
    damaged = (
        f"[FAIL] Engine DB file: the Engine DB {database}: found a damaged file (database disk image is malformed)"
    )
    assert damaged in doctor.stdout or f"[FAIL] Engine DB file: {database} is damaged: " in doctor.stdout
    assert "Traceback" not in doctor.stderr


@pytest.mark.parametrize("dialect", SQLITE, indirect=True)
def test_a_locked_engine_db_is_reported_by_doctor(harness: Harness) -> None:
    database = harness.root / "engine.db"
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        doctor = harness.cli("doctor")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert doctor.returncode == 1, doctor
    assert f"[FAIL] Engine DB file: the Engine DB {database}: found a lock another process held" in doctor.stdout
    assert "fuser" in doctor.stdout


@pytest.mark.parametrize("dialect", POSTGRES, indirect=True)
def test_a_read_only_postgresql_engine_db_is_one_clear_error_and_doctor_fails(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    database = harness.db.engine.url.database
    harness.db.dispose()
    with psycopg.connect(pg.admin_dsn(), autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {database} SET default_transaction_read_only = on")
    paused = harness.cli("pause", "--pipeline_code", "p", "--reason", "maintenance")
    doctor = harness.cli("doctor")
    with psycopg.connect(pg.admin_dsn(), autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {database} RESET default_transaction_read_only")
    _one_clear_line(paused, 12, "a read-only session", "Point the Engine section at the primary")
    assert doctor.returncode == 1
    assert "[FAIL] Engine DB writable: " in doctor.stdout and "answers read-only" in doctor.stdout
    assert harness.rows(t.aud_pipeline_pauses) == []


@pytest.mark.parametrize("dialect", [*SQLITE, *POSTGRES], indirect=True)
def test_doctor_fails_when_a_guard_trigger_was_dropped(harness: Harness) -> None:
    if harness.project.dialect == "sqlite":
        with sqlite3.connect(harness.root / "engine.db") as plain:
            plain.execute("DROP TRIGGER tr_aud_actions_guard_delete")
    else:
        with psycopg.connect(pg.admin_dsn(harness.db.engine.url.database), autocommit=True) as plain:
            plain.execute("DROP TRIGGER tr_aud_actions_guard ON aud_actions")
    doctor = harness.cli("doctor")
    assert doctor.returncode == 1, doctor
    assert (
        "[FAIL] Engine DB tables and migrations: 1 guard trigger(s) are missing (tr_aud_actions_guard" in doctor.stdout
    )
