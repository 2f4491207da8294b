"""The overseer under one schedule tick: `etl-craft server` admitting and dispatching N pipelines at once.

A throwaway PostgreSQL database (127.0.0.1:5432, user postgres, trust auth, as the tests use) holds
a project of N pipelines (default 200), each a chain of M no-op PYTHON tasks (default 10: t00 <- t01
<- ... each depends on the previous one, so a run has one live attempt at a time).
Orchestration.Max_parallel_tasks is left at its default, 8: the server's pool of task processes,
shared by all its runs. Every pipeline is on the same cron, every minute, in UTC, with CATCHUP N and
OVERLAP_POLICY SKIP.

One real `etl-craft server` runs with ETL_CRAFT_SCHEDULE_CLOCK naming a clock file. The clock starts
when the pipelines were created; a MANUAL run of a separate one-task `warmup` pipeline is queued and
waited for first, so the fork server is up before measuring. The clock then moves to the next minute,
making one tick due for every pipeline at once; the wall time of that write is "due". Once every
tick's run ended, the Engine DB gives:

- admission latency: due -> the run turned IN-PROGRESS. START_DATE is written when the QUEUED run is
  created (not when it is admitted), so a benchmark-only trigger in the throwaway database (schema
  etlc_bench) records the instant of each QUEUED -> IN-PROGRESS update. Also reported: due -> the run
  was created (START_DATE), and the admission measured from the first run created, which leaves out
  the up to 1 s the server takes to notice a test-clock move (it polls the file once per loop; on the
  real clock it sleeps until the tick instead);
- dispatch latency: the task became ready (its predecessor attempt's ENDED_AT; for t00, the run's
  admission) -> the attempt's STARTED_AT (RUNNING, written by the task process);
- queue age: ready -> CLAIMED_AT, how long a ready task waits for the overseer to claim it (the local
  provider queues and claims an attempt in one transaction, so QUEUED_AT -> CLAIMED_AT is 0 and is
  reported only as a check), and the same less the time every one of the pool's processes was taken
  (attempts hold one from CLAIMED_AT to ENDED_AT): the queue age while slots are free, which the
  budget is about; claim -> RUNNING is the task process's start;
- memory: the server's peak RSS (VmHWM) read before SIGTERM, the long-lived helpers it started (the
  fork server) likewise, and, sampled every half second, the whole process tree's PSS and the
  number of task processes alive at once;
- CPU: seconds of the server, of the task processes and (when PostgreSQL runs on this machine and
  its data directory is readable) of PostgreSQL, their sum per attempt, and how busy the machine's
  CPUs were from the tick to the last run's end: near 100% means the machine, not the scheduler,
  set the pace.

The baseline, measured in the same run with its own database and server, is the same tick for one
pipeline: the latency with no load. Budgets from the plan (admission p99 under 2 s, queue age p99
under 5 s while slots are free) are reported with whether they were met, never asserted. Without a
PostgreSQL server the benchmark is skipped and the JSON says so. The full 200 x 10 size finishes in
about three minutes on a 2-core machine; `--pipelines 20 --tasks 3` is a quick check (30 s).
Results go to release/benchmarks/server.json; `--log-dir` keeps each server's stderr.

    uv run python -m benchmarks.server [--pipelines 200] [--tasks 10] [--timeout 1800] [--log-dir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from benchmarks import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "release" / "benchmarks"
ETL_CRAFT = str(Path(sys.executable).with_name("etl-craft"))
PG: dict[str, Any] = {
    "host": os.environ.get("ETL_CRAFT_TEST_PG_HOST", "127.0.0.1"),
    "port": int(os.environ.get("ETL_CRAFT_TEST_PG_PORT", "5432")),
    "user": os.environ.get("ETL_CRAFT_TEST_PG_USER", "postgres"),
}
CRON = "* * * * *"
ADMISSION_BUDGET_SECONDS = 2.0
QUEUE_AGE_BUDGET_SECONDS = 5.0
MAX_PARALLEL_TASKS = 8  # Orchestration.Max_parallel_tasks, left at its default: the overseer's pool
SAMPLE_SECONDS = 0.5
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")

NOOP_SCRIPT = """\
from etl_craft.scripting import ScriptResult


def run(task):
    return ScriptResult(row_count=0)
"""

# Records when each run is admitted: the run row keeps no admission time of its own.
ADMISSION_PROBE = """\
CREATE SCHEMA etlc_bench;
CREATE TABLE etlc_bench.admissions (pipeline_run_id BIGINT PRIMARY KEY, admitted_at TIMESTAMPTZ NOT NULL);
CREATE FUNCTION etlc_bench.record_admission() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO etlc_bench.admissions VALUES (NEW.pipeline_run_id, clock_timestamp()) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER etlc_bench_admission AFTER UPDATE OF status ON public.aud_pipelines_run_log
    FOR EACH ROW WHEN (OLD.status = 'QUEUED' AND NEW.status = 'IN-PROGRESS')
    EXECUTE FUNCTION etlc_bench.record_admission();
"""


# --- the project ------------------------------------------------------------------------------------


def _codes(pipelines: int, tasks: int) -> tuple[list[str], list[str]]:
    width_p, width_t = len(str(pipelines - 1)), max(2, len(str(tasks - 1)))
    return [f"p{n:0{width_p}d}" for n in range(pipelines)], [f"t{n:0{width_t}d}" for n in range(tasks)]


def project_sql(pipelines: int, tasks: int) -> str:
    """One migration: N scheduled chains of M tasks, and the unscheduled one-task `warmup` pipeline."""
    pipeline_codes, task_codes = _codes(pipelines, tasks)
    rows = ",\n".join(f"('{c}', '{c}', 'FULL', '{CRON}', 'UTC', 'N', 1, 'SKIP')" for c in pipeline_codes)
    values = ", ".join(f"('{c}')" for c in task_codes)
    lines = [
        "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, RUN_SCHEDULE, SCHEDULE_TIMEZONE,"
        f" CATCHUP, MAX_CATCHUP_RUNS, OVERLAP_POLICY) VALUES\n{rows};",
        "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('warmup', 'warmup', 'FULL');",
        "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)\n"
        f"SELECT v.column1, 'ETL', p.PIPELINE_ID, 'PYTHON' FROM (VALUES {values}) v\n"
        "CROSS JOIN CFG_PIPELINES p WHERE p.ACTIVE_FLAG = 'Y' AND p.PIPELINE_CODE <> 'warmup';",
        "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)\n"
        "SELECT 'w00', 'ETL', PIPELINE_ID, 'PYTHON' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'warmup';",
        "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"
        "SELECT TASK_ID, 'SCRIPT_NAME', 'noop.py' FROM CFG_TASKS;",
    ]
    if tasks > 1:
        chain = ", ".join(f"('{task_codes[n]}', '{task_codes[n - 1]}')" for n in range(1, tasks))
        lines.append(
            "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)\n"
            f"SELECT t.PIPELINE_ID, t.TASK_ID, u.TASK_ID, 'SUCCESS' FROM (VALUES {chain}) v\n"
            "JOIN CFG_TASKS t ON t.TASK_CODE = v.column1\n"
            "JOIN CFG_TASKS u ON u.TASK_CODE = v.column2 AND u.PIPELINE_ID = t.PIPELINE_ID;"
        )
    return "\n".join(lines) + "\n"


def _write_project(folder: Path, database: str, pipelines: int, tasks: int) -> dict[str, str]:
    (folder / "ingestion_scripts").mkdir()
    (folder / "migrations").mkdir()
    (folder / "ingestion_scripts" / "noop.py").write_text(NOOP_SCRIPT)
    (folder / "migrations" / "0001_pipelines.sql").write_text(project_sql(pipelines, tasks))
    (folder / "craft-connector.yml").write_text(
        "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
        f"Engine:\n  jdbc_url: jdbc:postgresql://{PG['host']}:{PG['port']}/{database}\n"
        f"  schema: public\n  user: {PG['user']}\n"
    )
    return dict(os.environ, ETL_CRAFT_CONFIG=str(folder / "craft-connector.yml"))


# --- PostgreSQL -------------------------------------------------------------------------------------


def postgres_problem() -> str | None:
    try:
        with psycopg.connect(**PG, dbname="postgres", connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        return f"no PostgreSQL server answers at {PG['host']}:{PG['port']} ({' '.join(str(error).split())})"
    return None


@contextlib.contextmanager
def throwaway_database() -> Iterator[str]:
    name = f"etlc_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(**PG, dbname="postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        with psycopg.connect(**PG, dbname="postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _query(database: str, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(**PG, dbname=database, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def _queue_warmup_run(database: str) -> None:
    """A QUEUED MANUAL run of `warmup` for the server to admit, announced as transitions do."""
    with psycopg.connect(**PG, dbname=database) as conn:
        conn.execute("SELECT set_config('etl_craft.actor', 'benchmark', true)")
        conn.execute("SELECT set_config('etl_craft.actor_kind', 'HUMAN', true)")
        row = conn.execute(
            "INSERT INTO aud_pipelines_run_log (pipeline_id, status, trigger_kind, run_key)"
            " SELECT pipeline_id, 'QUEUED', 'MANUAL', 'benchmark:warmup' FROM cfg_pipelines"
            " WHERE pipeline_code = 'warmup' AND active_flag = 'Y' RETURNING pipeline_run_id"
        ).fetchone()
        assert row is not None
        conn.execute("SELECT pg_notify('etl_craft_events', %s)", (f"run:{row[0]}",))


# --- the server process -----------------------------------------------------------------------------


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """(own utime + stime, reaped children's cutime + cstime) in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    own = (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND
    children = (int(fields[13]) + int(fields[14])) / TICKS_PER_SECOND
    return own, children


def _machine_cpu_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine since boot, from /proc/stat."""
    with open("/proc/stat") as fh:
        ticks = [int(value) for value in fh.readline().split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)  # idle and iowait are not busy


def _postmaster_pid() -> int | None:
    """The PostgreSQL server's pid when it runs on this machine and its data directory is readable."""
    try:
        with psycopg.connect(**PG, dbname="postgres") as conn:
            row = conn.execute("SELECT current_setting('data_directory')").fetchone()
        with open(Path(str(row[0] if row else "")) / "postmaster.pid") as fh:
            pid = int(fh.readline())
    except (psycopg.Error, OSError, ValueError):
        return None
    return pid if Path(f"/proc/{pid}").exists() else None


def _postgres_cpu_seconds(postmaster: int | None) -> float | None:
    """CPU of the PostgreSQL server so far: the postmaster, its live backends and the reaped ones."""
    if postmaster is None:
        return None
    own, reaped = _cpu_seconds(postmaster)
    return own + reaped + sum(_cpu_seconds(pid)[0] for pid in _children_by_parent().get(postmaster, []))


def _children_by_parent() -> dict[int, list[int]]:
    """Every live process (zombies left out) by its parent's pid, read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(entry))
    return parents


def _descendants(pid: int) -> list[int]:
    parents = _children_by_parent()
    found, stack = [], [pid]
    while stack:
        for child in parents.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class TreeSampler(threading.Thread):
    """Every half second: the server's process tree, its PSS, and how many processes it holds."""

    def __init__(self, pid: int) -> None:
        super().__init__(name="server-tree-sampler", daemon=True)
        self.pid = pid
        self.stopped = threading.Event()
        self.peak_tree_pss_kb = 0
        self.peak_descendants = 0
        self.peak_child_hwm_kb = 0
        self.samples = 0

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_SECONDS):
            children = _descendants(self.pid)
            pss = _pss_kb(self.pid) + sum(_pss_kb(c) for c in children)
            self.peak_tree_pss_kb = max(self.peak_tree_pss_kb, pss)
            self.peak_descendants = max(self.peak_descendants, len(children))
            for child in children:
                self.peak_child_hwm_kb = max(self.peak_child_hwm_kb, _status_kb(child, "VmHWM"))
            self.samples += 1


class Server:
    def __init__(self, folder: Path, env: dict[str, str], clock: Path) -> None:
        self.stderr_path = folder / "server.stderr"
        self._err = open(self.stderr_path, "w")  # noqa: SIM115
        self.process = subprocess.Popen(
            [ETL_CRAFT, "server"],
            cwd=folder,
            env=dict(env, ETL_CRAFT_SCHEDULE_CLOCK=str(clock)),
            stdout=subprocess.DEVNULL,
            stderr=self._err,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL for whatever is left after a minute; the exit code."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            code: int | None = self.process.wait(60)
        except subprocess.TimeoutExpired:
            for child in _descendants(self.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
            self.process.kill()
            self.process.wait()
            code = None
        self._err.close()
        return code

    def log_counts(self) -> dict[str, int]:
        levels: Counter[str] = Counter()
        for line in self.stderr_path.read_text(errors="replace").splitlines():
            for level in ("WARNING", "ERROR", "CRITICAL"):
                if f" {level} " in line:
                    levels[level] += 1
        return dict(levels)

    def last_lines(self, count: int = 20) -> str:
        return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-count:])


class Clock:
    """The file ETL_CRAFT_SCHEDULE_CLOCK names, written whole and renamed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def set(self, instant: datetime) -> float:
        partial = self.path.with_suffix(".partial")
        partial.write_text(instant.isoformat())
        partial.replace(self.path)
        return time.time()


def _wait_for(check: Any, timeout: float, what: str, server: Server, poll: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        if server.process.poll() is not None:
            raise SystemExit(f"etl-craft server exited {server.process.returncode}:\n{server.last_lines()}")
        time.sleep(poll)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}:\n{server.last_lines()}")


# --- measuring --------------------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between the closest ranks."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(seconds: Sequence[float]) -> dict[str, float | int | None]:
    if not seconds:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    return {
        "n": len(seconds),
        "p50_ms": round(percentile(seconds, 0.5) * 1000, 1),
        "p99_ms": round(percentile(seconds, 0.99) * 1000, 1),
        "max_ms": round(max(seconds) * 1000, 1),
    }


def _between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds()


RUNS_SQL = """
SELECT r.pipeline_run_id, r.status, r.start_date, r.end_date, a.admitted_at
FROM aud_pipelines_run_log r LEFT JOIN etlc_bench.admissions a ON a.pipeline_run_id = r.pipeline_run_id
WHERE r.run_key = %s ORDER BY r.pipeline_run_id
"""
ATTEMPTS_SQL = """
SELECT tr.pipeline_run_id, t.task_code, a.attempt_number, a.status, a.queued_at, a.claimed_at, a.started_at,
       a.ended_at
FROM aud_task_attempts a
JOIN aud_task_run_log tr ON tr.task_run_id = a.task_run_id
JOIN cfg_tasks t ON t.task_id = tr.task_id
JOIN aud_pipelines_run_log r ON r.pipeline_run_id = tr.pipeline_run_id
WHERE r.run_key = %s ORDER BY tr.pipeline_run_id, t.task_code, a.attempt_number
"""


def full_periods(busy: Sequence[tuple[datetime, datetime]], slots: int) -> list[tuple[datetime, datetime]]:
    """The periods during which `slots` or more of the `busy` intervals overlap: every task process
    the overseer may run at once (Orchestration.Max_parallel_tasks) was taken."""
    changes = sorted([(begin, 1) for begin, _ in busy] + [(end, -1) for _, end in busy])
    periods, live, since = [], 0, None
    for instant, change in changes:
        live += change
        if live >= slots and since is None:
            since = instant
        elif live < slots and since is not None:
            periods.append((since, instant))
            since = None
    return periods


def overlap_seconds(periods: Sequence[tuple[datetime, datetime]], start: datetime, end: datetime) -> float:
    return sum(max(0.0, _between(max(lo, start), min(hi, end))) for lo, hi in periods)


def latencies(database: str, run_key: str, due: datetime) -> dict[str, Any]:
    runs = _query(database, RUNS_SQL, (run_key,))
    attempts = _query(database, ATTEMPTS_SQL, (run_key,))
    admitted = {run_id: at for run_id, _, _, _, at in runs if at is not None}
    first_created = min(start for _, _, start, _, _ in runs)
    by_run: dict[int, list[tuple[Any, ...]]] = {}
    for row in attempts:
        by_run.setdefault(row[0], []).append(row)
    dispatch_first: list[float] = []
    dispatch_next: list[float] = []
    queue_age: list[float] = []
    queue_age_free: list[float] = []
    claim_to_running: list[float] = []
    stored_queue_age: list[float] = []
    # A task process holds one of the overseer's Max_parallel_tasks from its claim to its end.
    full = full_periods([(row[5], row[7]) for row in attempts if row[5] and row[7]], MAX_PARALLEL_TASKS)
    for run_id, rows in by_run.items():
        ready = admitted.get(run_id)  # t00 is ready once the run is admitted
        for position, (_, _, _, _, queued_at, claimed_at, started_at, ended_at) in enumerate(rows):
            # Rows come in chain order (t00, t01, ...), one attempt each: no-op tasks don't fail.
            if ready is not None and claimed_at is not None and started_at is not None:
                (dispatch_next if position else dispatch_first).append(_between(ready, started_at))
                queue_age.append(_between(ready, claimed_at))
                queue_age_free.append(_between(ready, claimed_at) - overlap_seconds(full, ready, claimed_at))
                claim_to_running.append(_between(claimed_at, started_at))
            if queued_at is not None and claimed_at is not None:
                stored_queue_age.append(_between(queued_at, claimed_at))
            ready = ended_at
    ends = [end for _, _, _, end, _ in runs if end is not None]
    return {
        "runs": len(runs),
        "run_statuses": dict(Counter(status for _, status, _, _, _ in runs)),
        "attempts": len(attempts),
        "attempt_statuses": dict(Counter(row[3] for row in attempts)),
        "makespan_seconds": round(_between(due, max(ends)), 2) if ends else None,
        "tasks_per_second": round(len(attempts) / _between(due, max(ends)), 1) if ends else None,
        "created_from_due": summary([_between(due, start) for _, _, start, _, _ in runs]),
        "admission_from_due": summary([_between(due, at) for at in admitted.values()]),
        "admission_from_first_created": summary([_between(first_created, at) for at in admitted.values()]),
        "dispatch": summary(dispatch_first + dispatch_next),
        "dispatch_first_task": summary(dispatch_first),
        "dispatch_next_task": summary(dispatch_next),
        "queue_age": summary(queue_age),
        "queue_age_while_slots_free": summary(queue_age_free),
        "claim_to_running": summary(claim_to_running),
        "stored_queued_to_claimed": summary(stored_queue_age),
    }


def _execute(database: str, sql: str) -> None:
    with psycopg.connect(**PG, dbname=database, autocommit=True) as conn:
        conn.execute(sql)


def _unfinished(database: str, run_key: str, expected: int) -> bool:
    total, unfinished = _query(
        database,
        "SELECT count(*), count(*) FILTER (WHERE status IN ('QUEUED', 'IN-PROGRESS'))"
        " FROM aud_pipelines_run_log WHERE run_key = %s",
        (run_key,),
    )[0]
    return total >= expected and unfinished == 0


def _first_tick(database: str) -> tuple[datetime, datetime]:
    """Where the clock starts (when the pipelines were created) and their first tick, due for all."""
    first, last = _query(
        database, "SELECT min(create_date), max(create_date) FROM cfg_pipelines WHERE run_schedule IS NOT NULL"
    )[0]
    first, last = first.astimezone(UTC), last.astimezone(UTC)
    tick = last.replace(second=0, microsecond=0) + timedelta(minutes=1)
    if first <= tick - timedelta(minutes=1):
        raise SystemExit(f"the pipelines were created across a minute boundary ({first} to {last}); run again")
    return first, tick


def _helpers(pid: int) -> dict[int, dict[str, Any]]:
    """The long-lived processes the server started (the fork server, multiprocessing's helpers)."""
    found = {}
    for child in _descendants(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[child] = {
            "command": command.strip()[:120],
            "cpu": _cpu_seconds(child),
            "hwm_kb": _status_kb(child, "VmHWM"),
        }
    return found


def measure(pipelines: int, tasks: int, timeout: float, log_dir: Path | None = None) -> dict[str, Any]:
    """One server, one tick for `pipelines` chains of `tasks`, on a database of its own; its stderr is
    copied to `log_dir` when given."""
    with throwaway_database() as database, tempfile.TemporaryDirectory(prefix="etlc-bench-server-") as tmp:
        folder = Path(tmp)
        env = _write_project(folder, database, pipelines, tasks)
        setup = subprocess.run([ETL_CRAFT, "setup"], cwd=folder, env=env, capture_output=True, text=True, check=False)
        if setup.returncode != 0:
            output = setup.stdout[-2000:] + setup.stderr[-4000:]
            raise SystemExit(f"etl-craft setup exited {setup.returncode}:\n{output}")
        _execute(database, ADMISSION_PROBE)
        start, tick = _first_tick(database)
        run_key = f"schedule:{tick:%Y-%m-%dT%H:%M:%SZ}"
        clock = Clock(folder / "schedule-clock")
        clock.set(start)
        postmaster = _postmaster_pid()
        server = Server(folder, env, clock.path)
        sampler = TreeSampler(server.pid)
        exit_code: int | None = None
        try:
            _wait_for(
                lambda: _query(
                    database, "SELECT 1 FROM aud_overseers WHERE pid = %s AND stopped_at IS NULL", (server.pid,)
                ),
                120,
                "the server to take the lead",
                server,
            )
            _queue_warmup_run(database)
            _wait_for(
                lambda: _unfinished(database, "benchmark:warmup", 1), 120, "the warm-up run to end", server, poll=0.1
            )
            time.sleep(1.0)  # the warm-up's last step done; the loop idles
            helpers = _helpers(server.pid)
            server_cpu_before = _cpu_seconds(server.pid)[0]
            postgres_cpu_before = _postgres_cpu_seconds(postmaster)
            machine_before = _machine_cpu_ticks()
            sampler.start()
            due = datetime.fromtimestamp(clock.set(tick), UTC)
            _wait_for(
                lambda: _unfinished(database, run_key, pipelines),
                timeout,
                f"the {pipelines} runs of {run_key} to end",
                server,
                poll=0.5,
            )
            waited = _between(due, datetime.now(UTC))
            sampler.stopped.set()
            sampler.join()
            server_hwm_kb = _status_kb(server.pid, "VmHWM")
            server_cpu = _cpu_seconds(server.pid)[0] - server_cpu_before
            postgres_cpu_after = _postgres_cpu_seconds(postmaster)
            machine_after = _machine_cpu_ticks()
            helpers_after = _helpers(server.pid)
        finally:
            sampler.stopped.set()
            exit_code = server.stop()
            if log_dir is not None:
                log_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(server.stderr_path, log_dir / f"server-{pipelines}x{tasks}.stderr")
        task_cpu = sum(
            helpers_after[pid]["cpu"][1] - helpers[pid]["cpu"][1] for pid in helpers_after.keys() & helpers.keys()
        )
        measured = latencies(database, run_key, due)
        postgres_cpu = _difference(postgres_cpu_after, postgres_cpu_before)
        measured.update(
            pipelines=pipelines,
            tasks_per_pipeline=tasks,
            run_key=run_key,
            waited_seconds=round(waited, 1),
            memory={
                "server_peak_rss_mb": round(server_hwm_kb / 1024, 1),
                "helpers": [
                    {"command": h["command"], "peak_rss_mb": round(h["hwm_kb"] / 1024, 1)}
                    for h in helpers_after.values()
                ],
                "tree_peak_pss_mb": round(sampler.peak_tree_pss_kb / 1024, 1),
                "task_process_peak_rss_mb": round(sampler.peak_child_hwm_kb / 1024, 1),
                "peak_task_processes": max(0, sampler.peak_descendants - len(helpers_after)),
                "samples": sampler.samples,
            },
            cpu_seconds={
                "server": round(server_cpu, 1),
                "task_processes": round(task_cpu, 1),
                # None when PostgreSQL runs elsewhere (or its pid can't be read): then not in per_attempt_ms
                "postgresql": postgres_cpu,
                "per_attempt_ms": round(
                    1000 * (server_cpu + task_cpu + (postgres_cpu or 0)) / max(1, measured["attempts"]), 1
                ),
                # Busy share of every CPU of the machine from the tick to the last run's end.
                "machine_busy_percent": round(
                    100 * (machine_after[0] - machine_before[0]) / max(1, machine_after[1] - machine_before[1])
                ),
            },
            server_log=server.log_counts(),
            server_exit_code=exit_code,
        )
        return measured


def _difference(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else round(after - before, 1)


def _budgets(load: dict[str, Any]) -> dict[str, Any]:
    admission = load["admission_from_due"]["p99_ms"]
    queue_age = load["queue_age_while_slots_free"]["p99_ms"]
    return {
        "admission_p99_seconds": {
            "budget": ADMISSION_BUDGET_SECONDS,
            "measured": None if admission is None else round(admission / 1000, 3),
            "met": admission is not None and admission / 1000 < ADMISSION_BUDGET_SECONDS,
        },
        "queue_age_p99_seconds": {
            "budget": QUEUE_AGE_BUDGET_SECONDS,
            "measured": None if queue_age is None else round(queue_age / 1000, 3),
            "met": queue_age is not None and queue_age / 1000 < QUEUE_AGE_BUDGET_SECONDS,
            "measured_as": "ready -> CLAIMED, less the time all Max_parallel_tasks task processes were taken",
        },
    }


def _ratio(load: dict[str, Any], baseline: dict[str, Any], metric: str) -> float | None:
    over, under = load[metric]["p99_ms"], baseline[metric]["p99_ms"]
    return round(over / under, 1) if over is not None and under else None


def _print_summary(report: dict[str, Any]) -> None:
    load, baseline = report["load"], report["baseline"]
    print(
        f"etl-craft server, one tick: {load['pipelines']} pipelines x {load['tasks_per_pipeline']} chained no-op "
        f"tasks (baseline: {baseline['pipelines']} pipeline), {report['machine']['cpus']} CPU(s)"
    )
    print(f"{'':34} {'load p50 / p99 ms':>22} {'baseline p50 / p99 ms':>24}")
    for label, metric in (
        ("run created (due -> QUEUED)", "created_from_due"),
        ("admission (due -> IN-PROGRESS)", "admission_from_due"),
        ("admission (first created -> IP)", "admission_from_first_created"),
        ("dispatch (ready -> RUNNING)", "dispatch"),
        ("  first task", "dispatch_first_task"),
        ("  next tasks", "dispatch_next_task"),
        ("queue age (ready -> CLAIMED)", "queue_age"),
        ("  while a process slot was free", "queue_age_while_slots_free"),
        ("claim -> RUNNING", "claim_to_running"),
    ):
        cells = [f"{m[metric]['p50_ms']} / {m[metric]['p99_ms']}" for m in (load, baseline)]
        print(f"{label:34} {cells[0]:>22} {cells[1]:>24}")
    print(
        f"runs {load['run_statuses']}, attempts {load['attempt_statuses']}, makespan {load['makespan_seconds']} s "
        f"({load['tasks_per_second']} tasks/s; baseline {baseline['makespan_seconds']} s)"
    )
    memory, cpu = load["memory"], load["cpu_seconds"]
    print(
        f"server peak RSS {memory['server_peak_rss_mb']} MB (baseline {baseline['memory']['server_peak_rss_mb']}), "
        f"tree peak PSS {memory['tree_peak_pss_mb']} MB, up to {memory['peak_task_processes']} task processes "
        f"at once; CPU s: server {cpu['server']}, tasks {cpu['task_processes']}, PostgreSQL {cpu['postgresql']}"
        f" ({cpu['per_attempt_ms']} ms per attempt; the machine's CPUs {cpu['machine_busy_percent']}% busy)"
    )
    for name, budget in report["budgets"].items():
        verdict = "met" if budget["met"] else "MISSED"
        print(f"budget {name} < {budget['budget']}: {budget['measured']} -> {verdict}")


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="benchmarks.server", description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", type=int, default=200, help="scheduled pipelines ticking at once")
    parser.add_argument("--tasks", type=int, default=10, help="no-op PYTHON tasks per pipeline, in a chain")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for every run to end")
    parser.add_argument("--log-dir", type=Path, help="keep each server's stderr in this folder")
    args = parser.parse_args(argv)
    if args.pipelines < 1 or args.tasks < 1:
        parser.error("--pipelines and --tasks must be at least 1")
    started = time.perf_counter()
    report: dict[str, Any] = {
        "benchmark": "server",
        "recorded_at": datetime.now(UTC).isoformat(),
        "machine": machine(),
        "shape": {
            "pipelines": args.pipelines,
            "tasks_per_pipeline": args.tasks,
            "graph": "chain",
            "cron": CRON,
            "max_parallel_tasks": MAX_PARALLEL_TASKS,
            "engine_db": "postgresql",
        },
    }
    problem = postgres_problem()
    if problem is not None:
        report.update(skipped=True, reason=problem, seconds=round(time.perf_counter() - started, 1))
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "server.json").write_text(json.dumps(report, indent=2) + "\n")
        print(f"benchmarks.server skipped: {problem}")
        return report
    baseline = measure(1, args.tasks, args.timeout, args.log_dir)
    load = measure(args.pipelines, args.tasks, args.timeout, args.log_dir)
    report.update(
        skipped=False,
        load=load,
        baseline=baseline,
        budgets=_budgets(load),
        ratios_p99_load_to_baseline={
            metric: _ratio(load, baseline, metric)
            for metric in ("admission_from_due", "admission_from_first_created", "dispatch", "queue_age")
        },
        seconds=round(time.perf_counter() - started, 1),
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "server.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    _print_summary(report)
    print(f"wrote {RESULTS / 'server.json'}")
    return report


if __name__ == "__main__":
    main()
