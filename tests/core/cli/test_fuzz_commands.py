"""Every command, driven with generated arguments (huge and negative integers, unicode, control
characters, very long strings, unknown codes): a documented exit status, no traceback, nothing the
terminal acts on, and one JSON document on stdout with --format json. On both Engine DBs.

Pipeline P is paused, so no generated `run` starts a task; pause and resume only ever reach Q.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etl_craft.cli.commands import CORE_COMMANDS
from etl_craft.cli.main import contributed_commands
from etl_craft.engine.schema import tables as t
from tests.core.cli.fuzzing import (
    BACKFILL,
    DATE,
    FUZZ_SETTINGS,
    INTEGER,
    PATH,
    TEXT,
    TIMESTAMP,
    Outcome,
    Spec,
    codes,
    command_line,
    fuzz_harness,
    inside,
    invoke,
    judge,
)
from tests.fixtures.cli import run_cli
from tests.fixtures.harness import Harness, TaskSpec
from tests.fixtures.project import DIALECTS

PAUSE_REASON = "fuzzing: no run of P may start"
RUNS = {"--run-id": INTEGER, "--run-key": TEXT}
REASON = {"--reason": TEXT}
STATUS = codes("SUCCESS", "FAILED", "SKIPPED")
SQL_ACTION = codes("CREATE_TABLE", "APPEND_TABLE", "SCD1_MERGE")
ROLE = codes("viewer", "operator", "developer", "admin")
# Never a new or empty folder, where the demo would run: a file, a folder with files, or no path at all.
DEMO_DIR = st.one_of(
    st.sampled_from([".", "migrations", "ingestion_scripts", "craft-connector.yml", "craft-connector.yml/x"]),
    TEXT.map(lambda t: "migrations/0001_test.sql/" + t),
    st.sampled_from(["", "a\x00b", "x" * 300, "\udcff"]),
)

SPECS = {
    "run": Spec(
        ("run",),
        {
            "--pipeline_code": codes("P"),
            "--task_code": codes("T"),
            "--run-date": DATE,
            "--backfill": BACKFILL,
            **REASON,
            **RUNS,
        },
        (
            "--force",
            "--ignore-dependencies",
            "--rerun",
            "--with-downstream",
            "--skip",
            "--init-only",
            "--finalize-only",
        ),
    ),
    "mark": Spec(
        ("mark",),
        {"--pipeline_code": codes("P", "Q"), "--task_code": codes("T"), "--status": STATUS, "--rows": INTEGER}
        | REASON
        | RUNS,
        ("--stale", "--new-run"),
    ),
    "cancel": Spec(("cancel",), {"--pipeline_code": codes("P", "Q"), **REASON, **RUNS}),
    "reopen": Spec(("reopen",), {"--pipeline_code": codes("P", "Q"), **REASON, **RUNS}),
    "reconcile": Spec(("reconcile",), {"--pipeline_code": codes("P", "Q"), "--task_code": codes("T")}),
    "purge": Spec(("purge",), {"--archive-to": TEXT}, ("--dry-run",)),
    "rehash": Spec(("rehash",), {"--target": TEXT}, ("--dry-run",)),
    "upgrade-targets": Spec(("upgrade-targets",), {"--action": SQL_ACTION, "--target": TEXT}, ("--dry-run",)),
    "pause": Spec(("pause",), {"--pipeline_code": codes("Q"), **REASON}),
    "resume": Spec(("resume",), {"--pipeline_code": codes("Q"), **REASON}),
    "list": Spec(("list",), {}),
    "graph": Spec(("graph",), {"--pipeline_code": codes("P", "Q")}),
    "steps": Spec(("steps",), {"--pipeline_code": codes("P", "Q"), **RUNS}),
    "status": Spec(("status",), {"--pipeline_code": codes("P", "Q"), **RUNS}),
    "explain": Spec(("explain",), {"--pipeline_code": codes("P", "Q"), "--task_code": codes("T"), **RUNS}),
    "task-run": Spec(("task-run",), {"--task-run-id": INTEGER}),
    "attempt": Spec(("attempt",), {"--attempt-id": INTEGER}),
    "attempt-log": Spec(("attempt-log",), {"--attempt-id": INTEGER, "--offset": INTEGER, "--limit": INTEGER}),
    "history": Spec(
        ("history",),
        {"--pipeline_code": codes("P", "Q"), "--task_code": codes("T"), "--limit": INTEGER, **RUNS},
        ("--all",),
    ),
    "audit": Spec(("audit",), {"--pipeline_code": codes("P", "Q"), "--since": TIMESTAMP}),
    "lineage": Spec(
        ("lineage",),
        {"--table": TEXT, "--column": TEXT, "--depth": INTEGER},
        ("--upstream", "--downstream", "--refresh", "--strict"),
    ),
    "validate": Spec(("validate",), {"--pipeline_code": codes("P", "Q")}),
    # No --output: the default catalog/ folder is the only one a generated path may not damage.
    "generate-docs": Spec(("generate-docs",), {}, ("--strict",)),
    "docs-version": Spec(("docs-version",), {}, ("--check",)),
    # Never a catalog folder, so every case ends (refused) instead of serving until a signal.
    "publish-docs": Spec(
        ("publish-docs",),
        {"--host": TEXT, "--port": INTEGER},
        ("--local-only", "--accept-new-url"),
        fixed=("--output", "no-catalog"),
    ),
    "generate-yml": Spec(
        ("generate-yml",),
        # No --output: a generated path could name the project's own files, which a later case needs.
        {"--pipeline_code": codes("P", "Q"), "--airflow-version": TEXT},
        ("--global", "--docs"),
    ),
    "clone": Spec(("clone",), {}),  # cloning is off in the fuzz project: refused, exit 3
    "doctor": Spec(("doctor",), {}),
    "setup": Spec(("setup",), {"--migrations-dir": PATH}, ("--print-grants",)),
    "init-db": Spec(("init-db",), {}, ("--force",)),
    "migrate": Spec(("migrate",), {"--migrations-dir": PATH}),
    "config export": Spec(("config", "export"), {"--config-dir": PATH}, ("--force",)),
    "config plan": Spec(("config", "plan"), {"--config-dir": PATH}),
    "config apply": Spec(("config", "apply"), {"--config-dir": PATH}),
    "demo": Spec(("demo",), {}, positional=DEMO_DIR),
    # The overseer runs until stopped: only ever with a configuration it can't find.
    "server": Spec(("server",), {}, fixed=("--config", "fuzz/missing.yml")),
    # The worker agent too (it claims until SIGTERM); its own flags are still parsed and judged first.
    "worker": Spec(
        ("worker",),
        {"--pool": TEXT, "--ingestion-slots": INTEGER, "--warehouse-slots": INTEGER, "--drain-seconds": INTEGER},
        fixed=("--config", "fuzz/missing.yml"),
    ),
    "token create": Spec(("token", "create"), {"--name": TEXT, "--role": ROLE, "--expires": TEXT}),
    "token list": Spec(("token", "list"), {}),
    "token revoke": Spec(("token", "revoke"), {"--token-id": INTEGER}),
    "user create": Spec(("user", "create"), {"--name": TEXT, "--role": ROLE}),
    "user passwd": Spec(("user", "passwd"), {"--name": TEXT}),
    "user disable": Spec(("user", "disable"), {"--name": TEXT}),
}


def test_every_command_has_a_spec() -> None:
    names = {c.name for c in [*CORE_COMMANDS, *contributed_commands()]}
    assert names == {name.split()[0] for name in SPECS}


@pytest.fixture(scope="module", params=DIALECTS)
def fuzz_project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """Pipelines P (paused) and Q with a task T each, shared by every command's examples."""
    with fuzz_harness(tmp_path_factory.mktemp("fuzz"), request.param) as harness:
        harness.pipeline("P", [TaskSpec("T")])
        harness.pipeline("Q", [TaskSpec("T")])
        paused = harness.cli("pause", "--pipeline_code", "P", "--reason", PAUSE_REASON)
        assert paused.returncode == 0, paused
        yield harness


@pytest.mark.parametrize("name", list(SPECS))
def test_generated_arguments_get_a_documented_answer(fuzz_project: Harness, name: str) -> None:
    spec = SPECS[name]

    @FUZZ_SETTINGS
    @given(command_line(spec))
    def answer(argv: list[str]) -> None:
        judge(invoke(argv))

    with inside(fuzz_project.root, fuzz_project.env()):
        answer()
    # P is still paused as the fixture left it, so no generated command started a task.
    (p_id,) = [p.pipeline_id for p in fuzz_project.rows(t.cfg_pipelines) if p.pipeline_code == "P"]
    pauses = fuzz_project.rows(t.aud_pipeline_pauses, t.aud_pipeline_pauses.c.pipeline_id == p_id)
    assert [(p.reason, p.resumed_at) for p in pauses] == [(PAUSE_REASON, None)]
    assert fuzz_project.attempts() == []


# One hostile command line per command, through the real `etl-craft` process: what the in-process
# examples prove holds for the installed command too.
REAL = {
    "run": ["run", "--pipeline_code", "P", "--run-id", "9223372036854775808"],
    "mark": ["mark", "--pipeline_code", "Q", "--status", "SUCCESS", "--reason", "x", "--rows", "-1"],
    "cancel": ["cancel", "--pipeline_code", "Q", "--reason", "\x1b[2J" * 1500],
    "reopen": ["reopen", "--pipeline_code", "Q", "--reason", "why", "--run-id", "99999999999999999999"],
    "reconcile": ["reconcile", "--pipeline_code", "x" * 5000],
    "purge": ["purge", "--archive-to", "\x1b[2J" * 1500],
    "rehash": ["rehash", "--target", "a\x1bb.c"],
    "upgrade-targets": ["upgrade-targets", "--action", "\u202eDROP_TABLE"],
    "pause": ["pause", "--pipeline_code", "Q", "--reason", "x" * 2001],
    "resume": ["resume", "--pipeline_code", "Q\x07", "--reason", "why"],
    "list": ["list", "--config", "x" * 5000],
    "graph": ["graph", "--pipeline_code", "NO_SUCH_PIPELINE"],
    "steps": ["steps", "--pipeline_code", "Q", "--run-key", "k\x07"],
    "status": ["status", "--pipeline_code", "Q", "--run-id", "-9223372036854775809"],
    "explain": ["explain", "--pipeline_code", "Q", "--task_code", "T", "--run-id", "0"],
    "task-run": ["task-run", "--task-run-id", "9223372036854775808"],
    "attempt": ["attempt", "--attempt-id", "0"],
    "attempt-log": ["attempt-log", "--attempt-id", "1", "--offset", "-1"],
    "history": ["history", "--pipeline_code", "Q", "--limit", "99999999999999999999"],
    "audit": ["audit", "--since", "2024-13-45T99:00"],
    "lineage": ["lineage", "--depth", "9223372036854775808"],
    "validate": ["validate", "--pipeline_code", "\U0001f600" * 200],
    "generate-docs": ["generate-docs", "--output", "craft-connector.yml"],
    "docs-version": ["docs-version", "--config", "x" * 300],
    "publish-docs": ["publish-docs", "--output", "no-catalog", "--port", "70000"],
    "generate-yml": ["generate-yml", "--pipeline_code", "Q", "--airflow-version", ">=2.2.0,\x1b[2J<\U0001f600"],
    "doctor": ["doctor", "--config", "x" * 300],
    "clone": ["clone", "--config", "x" * 300],
    "setup": ["setup", "--migrations-dir", "x" * 300],
    "init-db": ["init-db", "--config", "craft-connector.yml/x"],
    "migrate": ["migrate", "--migrations-dir", "craft-connector.yml"],
    "config": ["config", "plan", "--config-dir", "x" * 300],
    "demo": ["demo", "craft-connector.yml"],
    "server": ["server", "--config", "fuzz/missing.yml"],
    "worker": ["worker", "--config", "fuzz/missing.yml"],
    "token": ["token", "create", "--name", "\x1b[2J" * 100, "--role", "viewer"],
    "user": ["user", "disable", "--name", "nobody\x07"],
}


def test_every_command_has_a_real_process_example() -> None:
    assert set(REAL) == {name.split()[0] for name in SPECS}


@pytest.mark.parametrize("name", list(REAL))
def test_the_real_command_prints_no_traceback(fuzz_project: Harness, name: str) -> None:
    argv = [*REAL[name], "--format", "json"]
    result = run_cli(*argv, env=fuzz_project.env(), cwd=fuzz_project.root)
    outcome = judge_real(argv, result.returncode, result.stdout, result.stderr)
    assert outcome["exit_code"] == result.returncode != 0
    assert len([line for line in result.stderr.splitlines() if line.startswith("error: ")]) == 1


def judge_real(argv: list[str], status: int, stdout: str, stderr: str) -> dict[str, object]:
    doc = judge(Outcome(argv, status, stdout, stderr))
    assert doc is not None and doc["schema"] == "etl-craft/error/1", (argv, stdout, stderr)
    return doc
