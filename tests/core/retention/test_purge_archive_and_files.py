"""`etl-craft purge` beyond the rows: `--archive-to` writes every removed row before its batch
commits (and a failed write removes nothing), the log files of removed attempts leave Log_dir and
Logs.Store, and dead web UI sessions go."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t
from tests.core.retention.test_purge import NOW, OLD, RECENT, _build, _counts
from tests.fixtures.cli import run_cli
from tests.fixtures.project import Project
from tests.fixtures.seed import _insert


def _archived(folder: Path) -> dict[str, list[dict[str, object]]]:
    [purge_dir] = folder.iterdir()
    assert purge_dir.name.startswith("purge-") and (purge_dir / "manifest.json").is_file()
    rows: dict[str, list[dict[str, object]]] = {}
    for batch in sorted(purge_dir.glob("*/*.jsonl.gz")):
        lines = gzip.decompress(batch.read_bytes()).decode().splitlines()
        rows.setdefault(batch.parent.name, []).extend(json.loads(line) for line in lines)
    return rows


def test_archive_to_a_folder_holds_every_removed_row(project: Project, tmp_path: Path) -> None:
    db = project.open_db()
    ids = _build(db)
    with db.read() as conn:
        old_runs = {ids["up_free"], ids["down_old"]}
        old_run_rows = [
            dict(r._mapping)
            for r in conn.execute(
                sa.select(t.aud_pipelines_run_log).where(t.aud_pipelines_run_log.c.pipeline_run_id.in_(old_runs))
            )
        ]
    archive = tmp_path / "archive"
    done = run_cli("purge", "--archive-to", f"file://{archive}", "--format", "json", env=project.env())
    assert done.returncode == 0, done
    doc = done.json()
    rows = _archived(archive)
    assert {table: len(found) for table, found in rows.items()} == {
        table: count for table, count in doc["removed"].items() if count
    }
    assert {r["pipeline_run_id"] for r in rows["AUD_PIPELINES_RUN_LOG"]} == old_runs
    by_id = {r["pipeline_run_id"]: r for r in rows["AUD_PIPELINES_RUN_LOG"]}
    for row in old_run_rows:
        assert by_id[row["pipeline_run_id"]]["status"] == row["status"] == "SUCCESS"
        assert by_id[row["pipeline_run_id"]]["pipeline_id"] == row["pipeline_id"]
    assert doc["archive_to"].startswith(f"file://{archive}/purge-")
    with db.read() as conn:
        action = conn.execute(sa.select(t.aud_actions).where(t.aud_actions.c.command == "purge")).one()
    assert action.arguments["archive_to"] == doc["archive_to"]


def test_a_failed_archive_write_removes_nothing(project: Project, tmp_path: Path) -> None:
    db = project.open_db()
    _build(db)
    before = _counts(db)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    failed = run_cli("purge", "--archive-to", f"file://{blocker}/archive", env=project.env())
    assert failed.returncode == 11, failed
    assert f"file://{blocker}/archive" in failed.stderr and "nothing was removed" in failed.stderr
    assert _counts(db) == before
    for argv in (("--archive-to", "warehouse_schema"), ("--archive-to", "s3://[bad/x", "--dry-run")):
        refused = run_cli("purge", *argv, env=project.env())
        assert refused.returncode == 2, refused
        assert "file:///absolute/folder or s3://bucket/prefix" in refused.stderr
    assert _counts(db) == before


def _sessions_and_logs(db: EngineDb, log_dir: Path, store: Path) -> dict[str, Path]:
    """Two attempts with log files (one past Attempt_log_days, one recent) and three sessions."""
    files: dict[str, Path] = {}
    with db.write() as conn:
        pipeline = _insert(conn, t.cfg_pipelines, pipeline_code="logs", pipeline_name="L", refresh_type="FULL")
        task = _insert(conn, t.cfg_tasks, task_code="a", task_type="ETL", pipeline_id=pipeline, handler="PYTHON")
        run = _insert(
            conn, t.aud_pipelines_run_log, pipeline_id=pipeline, status="SUCCESS", start_date=RECENT, end_date=RECENT
        )
        task_run = _insert(conn, t.aud_task_run_log, task_id=task, pipeline_run_id=run, status="SUCCESS")
        for number, (name, ended) in enumerate((("old", OLD), ("new", RECENT)), start=1):
            key = Path("logs", f"run-{run}", f"a.attempt-{number}.log")
            for root in (log_dir, store):
                (root / key).parent.mkdir(parents=True, exist_ok=True)
                (root / key).write_text(f"{name} attempt\n")
            files[name], files[f"{name}_stored"] = log_dir / key, store / key
            _insert(
                conn, t.aud_task_attempts, task_run_id=task_run, attempt_number=number, status="SUCCESS",
                ended_at=ended, log_path=str(log_dir / key),
            )  # fmt: skip
        user = _insert(
            conn, t.cfg_users, user_name="ada", password_hash="x", role="viewer", created_by="test",
            created_at=OLD, password_changed_at=OLD,
        )  # fmt: skip
        for sha, expires, ended in (("expired", NOW - timedelta(hours=1), None), ("signed-out", NOW + timedelta(hours=1),
                                    NOW - timedelta(minutes=5)), ("live", NOW + timedelta(hours=1), None)):  # fmt: skip
            _insert(
                conn, t.aud_ui_sessions, session_sha256=sha, user_id=user, address="127.0.0.1", created_at=RECENT,
                expires_at=expires, last_seen_at=RECENT, ended_at=ended,
            )  # fmt: skip
    return files


def test_purge_removes_old_attempts_log_files_and_dead_sessions(project: Project, tmp_path: Path) -> None:
    store = tmp_path / "store"
    project.extra_sections = f"Logs:\n  Store: file://{store}\n"
    project.write_config()
    db = project.open_db()
    files = _sessions_and_logs(db, tmp_path / "log_dir", store)

    dry = run_cli("purge", "--dry-run", "--format", "json", env=project.env())
    assert dry.returncode == 0, dry
    assert (dry.json()["log_files"], dry.json()["removed"]["AUD_UI_SESSIONS"]) == (1, 2)
    assert all(path.exists() for path in files.values())

    done = run_cli("purge", "--format", "json", env=project.env())
    assert done.returncode == 0, done
    doc = done.json()
    assert doc["log_files"] == 1 and doc["removed"]["AUD_TASK_ATTEMPTS"] == 1 and doc["removed"]["AUD_UI_SESSIONS"] == 2
    assert not files["old"].exists() and not files["old_stored"].exists()
    assert files["new"].read_text() == "new attempt\n" and files["new_stored"].read_text() == "new attempt\n"
    with db.read() as conn:
        assert conn.execute(sa.select(t.aud_ui_sessions.c.session_sha256)).scalars().all() == ["live"]
        assert conn.execute(sa.select(t.aud_task_attempts.c.log_path)).scalars().all() == [str(files["new"])]


def test_archive_to_s3_and_log_files_in_an_s3_store(project: Project, tmp_path: Path, s3: Any) -> None:
    """On moto: the archive's objects hold the removed rows, and the removed attempt's stored log goes."""
    project.extra_sections = "Logs:\n  Store: s3://etl-logs/attempts\n"
    project.write_config()
    db = project.open_db()
    files = _sessions_and_logs(db, tmp_path / "log_dir", tmp_path / "unused")
    for name in ("old", "new"):
        key = "/".join(files[name].parts[-3:])
        s3.put_object(Bucket="etl-logs", Key=f"attempts/{key}", Body=f"{name} attempt\n".encode())
    done = run_cli("purge", "--archive-to", "s3://etl-logs/archive/", "--format", "json", env=project.env())
    assert done.returncode == 0, done
    doc = done.json()
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="etl-logs")["Contents"])
    folder = doc["archive_to"].removeprefix("s3://etl-logs/")
    assert keys == [
        f"{folder}/AUD_TASK_ATTEMPTS/00001.jsonl.gz",
        f"{folder}/AUD_UI_SESSIONS/00001.jsonl.gz",
        f"{folder}/manifest.json",
        f"attempts/{'/'.join(files['new'].parts[-3:])}",
    ]
    body = s3.get_object(Bucket="etl-logs", Key=f"{folder}/AUD_UI_SESSIONS/00001.jsonl.gz")["Body"].read()
    sessions = [json.loads(line) for line in gzip.decompress(body).decode().splitlines()]
    assert sorted(row["session_sha256"] for row in sessions) == ["expired", "signed-out"]
    assert not files["old"].exists() and files["new"].exists()
