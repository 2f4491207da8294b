"""How the Engine DB is read on the hot paths: reads.run_state (what a supervisor reads on every
step, in one query), what a task process reads about its attempt, and the transaction a read runs
in. Both dialects."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.enums import ActorKind
from etl_craft.engine import reads
from etl_craft.engine import transitions as tr
from etl_craft.engine.records import gate_records
from etl_craft.engine.schema import tables as t
from etl_craft.engine.transitions.values import AttemptOutcome
from tests.fixtures.seed import in_progress_run, pipeline_with_tasks

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SYSTEM = Actor("etl-craft@host", ActorKind.SYSTEM)
OWNER = "host:1:boot:1:aaaaaaaa"


def _attempt_ends(db, run_id: int, task_id: int, status: str) -> int:
    with db.write() as conn:
        queued = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=task_id, actor=SYSTEM, now=NOW)
        tr.claim_attempt(conn, queued.attempt_id, owner_id=OWNER, lease_until=NOW, host="h", now=NOW)
        tr.finish_attempt(
            conn, queued.attempt_id, owner_id=OWNER, outcome=AttemptOutcome(status, error_message="x"), now=NOW
        )
    return queued.attempt_id


def _expected(db, run_id: int):
    """The same state read the long way: four queries."""
    with db.read() as conn:
        run = reads.run(conn, run_id)
        assert run is not None
        return (
            run,
            reads.task_runs_of(conn, run_id),
            reads.attempts_of_run(conn, run_id),
            reads.open_pause(conn, run.pipeline_id),
        )


def test_run_state_reads_the_run_its_pause_task_runs_and_attempts(engine_db) -> None:
    pipeline, tasks = pipeline_with_tasks(engine_db, "p", ["a", "b", "c"])
    other, other_tasks = pipeline_with_tasks(engine_db, "q", ["a"])
    run_id = in_progress_run(engine_db, pipeline, OWNER, NOW, NOW)
    first = _attempt_ends(engine_db, run_id, tasks["a"], "FAILED")
    second = _attempt_ends(engine_db, run_id, tasks["a"], "SUCCESS")
    with engine_db.write() as conn:
        tr.skip_task(conn, pipeline_run_id=run_id, task_id=tasks["b"], reason="upstream failed", now=NOW)
        live = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=tasks["c"], actor=SYSTEM, now=NOW)
    _attempt_ends(
        engine_db, in_progress_run(engine_db, other, OWNER, NOW, NOW), other_tasks["a"], "SUCCESS"
    )  # another run: not read

    statements: list[str] = []
    with engine_db.read() as conn:
        sa.event.listen(conn, "before_cursor_execute", lambda *args: statements.append(args[2]))
        state = reads.run_state(conn, run_id)
    assert len(statements) == 1, statements  # one round trip on every supervisor step
    run, task_runs, attempts, pause = _expected(engine_db, run_id)
    assert state is not None
    assert (state.run, state.task_runs, state.attempts, state.paused) == (run, task_runs, attempts, False)
    assert set(state.task_runs) == set(tasks.values())
    assert [a.attempt_id for a in state.attempts[task_runs[tasks["a"]].task_run_id]] == [first, second]
    assert task_runs[tasks["b"]].task_run_id not in state.attempts  # SKIPPED: a task run without attempts
    assert state.latest_attempt(tasks["a"]).status == "SUCCESS"
    assert state.latest_attempt(tasks["b"]) is None
    assert state.attempt(live.attempt_id).status == "QUEUED"
    assert state.attempt(live.attempt_id + 1000) is None
    assert pause is None


def test_run_state_sees_an_open_pause_and_not_a_closed_one(engine_db) -> None:
    pipeline, _tasks = pipeline_with_tasks(engine_db, "p", ["a"])
    other, _ = pipeline_with_tasks(engine_db, "q", ["a"])
    run_id = in_progress_run(engine_db, pipeline, OWNER, NOW, NOW)
    pauses = t.aud_pipeline_pauses
    with engine_db.write() as conn:
        conn.execute(pauses.insert().values(pipeline_id=other, paused_at=NOW, paused_by="a", reason="other"))
        conn.execute(
            pauses.insert().values(pipeline_id=pipeline, paused_at=NOW, paused_by="a", reason="old", resumed_at=NOW)
        )
    with engine_db.read() as conn:
        assert reads.run_state(conn, run_id).paused is False
    with engine_db.write() as conn:
        conn.execute(pauses.insert().values(pipeline_id=pipeline, paused_at=NOW, paused_by="a", reason="now"))
    with engine_db.read() as conn:
        state = reads.run_state(conn, run_id)
        assert state.paused is True
        assert state.task_runs == {} and state.attempts == {}
        assert reads.run_state(conn, run_id + 1000) is None


def test_a_read_runs_each_statement_on_its_own_on_postgresql_and_in_one_transaction_on_sqlite(engine_db) -> None:
    """On PostgreSQL a read sends no BEGIN or COMMIT (each statement of READ COMMITTED sees its own
    snapshot anyway); on SQLite it keeps one read transaction."""
    for opened, on_postgresql in ((engine_db.read, (True, "IDLE")), (engine_db.write, (False, "INTRANS"))):
        with opened() as conn:
            conn.execute(sa.select(t.cfg_pipelines.c.pipeline_id)).all()
            driver = conn.connection.dbapi_connection
            if engine_db.dialect.name == "postgresql":
                assert (driver.autocommit, driver.info.transaction_status.name) == on_postgresql
            else:
                assert driver.in_transaction is True


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_postgresql_engine_skips_the_hstore_lookup_on_its_first_connection(engine_db) -> None:
    """The Engine DB has no HSTORE column, so a new engine (every task process has one) does not look
    the type up: three round trips fewer at each task process's start."""
    with engine_db.read() as conn:
        conn.execute(sa.select(sa.literal(1))).scalar_one()
    assert engine_db.engine.dialect.use_native_hstore is False
    assert engine_db.engine.dialect._has_native_hstore is False


def test_a_task_process_reads_whether_its_attempt_consumes_gate_decisions(engine_db) -> None:
    """Only an attempt claimed with a SATISFIED decision that selected a run consumes: the task process
    skips the consumption statement for every other attempt."""
    pipeline, tasks = pipeline_with_tasks(engine_db, "p", ["a", "b", "c"])
    upstream, upstream_tasks = pipeline_with_tasks(engine_db, "q", ["u"])
    with engine_db.write() as conn:
        edge = conn.execute(
            t.cfg_task_dependency.insert()
            .values(
                pipeline_id=pipeline,
                task_id=tasks["a"],
                depends_on_pipeline_id=upstream,
                depends_on_task_id=upstream_tasks["u"],
                dependency_type="SUCCESS",
            )
            .returning(t.cfg_task_dependency.c.task_dependency_id)
        ).scalar_one()
    upstream_run = in_progress_run(engine_db, upstream, OWNER, NOW, NOW)
    run_id = in_progress_run(engine_db, pipeline, OWNER, NOW, NOW)
    results = {"a": ("SATISFIED", upstream_run), "b": ("BYPASSED", None), "c": None}
    attempts = {}
    with engine_db.write() as conn:
        for code, decided in results.items():
            attempts[code] = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=tasks[code], actor=SYSTEM, now=NOW)
            if decided is not None:
                decision = gate_records.Decision(None, edge, decided[0], "judged", selected_pipeline_run_id=decided[1])
                gate_records.record_decisions(conn, run_id, [decision], NOW, attempts[code].attempt_id)
        # The same SATISFIED decision under another attempt of another run changes nothing here.
        other = tr.queue_attempt(conn, pipeline_run_id=upstream_run, task_id=upstream_tasks["u"], actor=SYSTEM, now=NOW)
        satisfied = gate_records.Decision(None, edge, "SATISFIED", "judged", selected_pipeline_run_id=upstream_run)
        gate_records.record_decisions(conn, upstream_run, [satisfied], NOW, other.attempt_id)
    with engine_db.read() as conn:
        consumes = {code: reads.attempt_subject(conn, a.attempt_id).consumes for code, a in attempts.items()}
    assert consumes == {"a": True, "b": False, "c": False}
