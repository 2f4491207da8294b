"""craft-connector.yml, its .env file and the config/ CSV files, generated (hostile values in every
known key, unknown keys, broken YAML and CSV, bytes that are not UTF-8, NUL, huge numbers, deep
nesting): every command that reads them answers with a documented status, no traceback and, with
--format json, one JSON document. On both Engine DBs."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from etl_craft.engine.schema import tables as t
from etl_craft.services.config_files.files import FILES
from tests.core.cli.fuzzing import FUZZ_SETTINGS, INTEGER, TEXT, fuzz_harness, inside, invoke, judge
from tests.fixtures.harness import Harness, TaskSpec
from tests.fixtures.project import DIALECTS

FUZZED_CONFIG = "fuzzed.yml"
COMMANDS = (["list"], ["validate"], ["steps", "--pipeline_code", "P"], ["config", "plan"])

# --- craft-connector.yml -------------------------------------------------------------------------------

SCALAR = st.one_of(
    TEXT,
    # isdecimal, not isdigit: "²" is a digit that int() refuses.
    INTEGER.map(lambda v: int(v) if v.lstrip("+-").isdecimal() and len(v) < 4000 else v),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(["local", "remote", "environment", "file", "UTC", "Mars/Olympus", "127.0.0.1:99999"]),
)
VALUE = st.recursive(
    SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=6
)
# Keys of each section that etl-craft reads, so generated values reach the checks behind them.
KEYS = {
    "Secrets": ["Source_type", "Path", "Profile"],
    "Orchestration": [
        "Mode",
        "Task_timeout_seconds",
        "Max_parallel_tasks",
        "Log_dir",
        "Gate_wait_minutes",
        "Dependency_gates",
        "Timezone",
        "Shutdown_grace_seconds",
        "Api_address",
        "Retries",
        "Enforce_sla",
        "Email",
        "Tags",
        "Profile",
    ],
    "Engine": ["jdbc_url", "schema", "user", "auth_mode", "secret", "Name"],
    "Warehouse": ["Name", "jdbc_url", "schema", "Table_format", "auth_mode"],
    "Cloning": ["Enabled", "Scope", "Base_location"],
}
# Paths and URLs stay inside the project folder and on this machine, whatever is generated.
SQLITE_URL = st.one_of(st.just("jdbc:sqlite:engine.db"), TEXT.map(lambda v: "jdbc:sqlite:fuzz/" + v))
PG_URL = TEXT.map(lambda v: "jdbc:postgresql://127.0.0.1:5432/" + v)
DUCKDB_URL = TEXT.map(lambda v: "jdbc:duckdb:fuzz/" + v)


def _safe(key: str, value: Any) -> Any:
    """A generated value, unless it would name a file outside the project or another machine."""
    if key in ("Path", "Log_dir", "Base_location") and isinstance(value, str):
        return "fuzz/" + value
    return value


@st.composite
def connector_yaml(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    doc = {section: dict(keys) if isinstance(keys, dict) else keys for section, keys in base.items()}
    for _ in range(draw(st.integers(1, 4))):
        section = draw(st.sampled_from([*KEYS, "Unknown"]))
        key = draw(st.sampled_from([*KEYS.get(section, []), "Unknown_key"]))
        if key == "jdbc_url" and section == "Engine":
            value = draw(st.one_of(SQLITE_URL, PG_URL))
        elif key == "jdbc_url":
            value = draw(st.one_of(DUCKDB_URL, PG_URL))
        else:
            value = _safe(key, draw(VALUE))
        target = doc.setdefault(section, {})
        if isinstance(target, dict):
            target[key] = value
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode("utf-8", "surrogatepass")
    return draw(st.one_of(st.just(text), _broken(text)))


def _broken(text: bytes) -> st.SearchStrategy[bytes]:
    """The same text with bytes inserted, a part cut away, or a hostile YAML construct added."""
    at = st.integers(0, len(text))
    bad = st.sampled_from(
        [
            b"\xff\xfe",
            b"\x00",
            b"\t",
            b"\xef\xbb\xbf",
            b": : :",
            b"&a [*a, *a]",
            b"!!python/object:os.system",
            b"{",
            b"- -",
        ]
    )
    nested = st.integers(10, 2000).map(lambda n: b"Deep: " + b"[" * n + b"]" * n + b"\n")
    duplicate = st.just(b"Engine:\n  schema: main\n")
    huge = st.just(b"Huge: " + b"9" * 5000 + b"\n")
    return st.one_of(
        st.tuples(at, bad).map(lambda p: text[: p[0]] + p[1] + text[p[0] :]),
        at.map(lambda n: text[:n]),
        st.one_of(nested, duplicate, huge).map(lambda extra: text + extra),
    )


ENV_FILE = st.one_of(
    st.lists(st.tuples(TEXT, TEXT).map(lambda p: f"{p[0]}={p[1]}"), max_size=4).map(
        lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")
    ),
    st.binary(max_size=200),
    st.just(b"ENGINE_SECRET=x\nENGINE_SECRET=y\n"),
)

# --- config/*.csv ----------------------------------------------------------------------------------------


@st.composite
def csv_files(draw: st.DrawFn, exported: dict[str, bytes]) -> dict[str, bytes]:
    """The exported files with cells, rows or headers generated, or their bytes broken."""
    files = dict(exported)
    for name in draw(st.lists(st.sampled_from(sorted(files)), min_size=1, max_size=3, unique=True)):
        rows = list(csv.reader(io.StringIO(files[name].decode("utf-8"), newline="")))
        header, body = rows[0], rows[1:]
        choice = draw(st.integers(0, 4))
        if choice == 0 and body:  # a cell of a row
            row = draw(st.sampled_from(body))
            row[draw(st.integers(0, len(row) - 1))] = draw(st.one_of(TEXT, INTEGER))
        elif choice == 1:  # a new row of generated cells
            cell = st.one_of(TEXT, INTEGER, st.sampled_from(["P", "T", "Y", "N", "SUCCESS", "PYTHON"]))
            body.append([draw(cell) for _ in header])
        elif choice == 2:  # the header
            header[draw(st.integers(0, len(header) - 1))] = draw(TEXT)
        buffer = io.StringIO(newline="")
        csv.writer(buffer, lineterminator="\n").writerows([header, *body])
        data = buffer.getvalue().encode("utf-8", "surrogatepass")
        if choice == 3:  # a byte inserted
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.sampled_from([b"\xff", b"\x00", b'"', b"\r", b"\xef\xbb\xbf"])) + data[at:]
        elif choice == 4:  # no CSV at all
            data = draw(st.binary(max_size=300))
        files[name] = data
    return files


# --- the project and the properties ------------------------------------------------------------------


@pytest.fixture(scope="module", params=DIALECTS)
def files_project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with fuzz_harness(tmp_path_factory.mktemp("files"), request.param) as harness:
        harness.pipeline("P", [TaskSpec("T")])
        exported = harness.cli("config", "export")
        assert exported.returncode == 0, exported
        yield harness


def _cfg_rows(harness: Harness) -> list[Any]:
    return [tuple(r) for table in (t.cfg_pipelines, t.cfg_tasks, t.cfg_task_parameters) for r in harness.rows(table)]


def test_a_generated_configuration_gets_a_documented_answer(files_project: Harness) -> None:
    base = yaml.safe_load(files_project.project.config_path.read_text(encoding="utf-8"))
    before = _cfg_rows(files_project)

    @FUZZ_SETTINGS
    @given(connector_yaml(base), ENV_FILE, st.sampled_from(COMMANDS), st.sampled_from(["json", "text"]))
    def answer(config: bytes, env_file: bytes, command: list[str], fmt: str) -> None:
        (files_project.root / FUZZED_CONFIG).write_bytes(config)
        (files_project.root / "fuzz").mkdir(exist_ok=True)
        (files_project.root / "fuzz" / ".env").write_bytes(env_file)
        judge(invoke([*command, "--config", FUZZED_CONFIG, "--format", fmt]))

    with inside(files_project.root, files_project.env()):
        answer()
    assert _cfg_rows(files_project) == before  # reading a configuration changed no metadata


def test_generated_config_files_get_a_documented_answer(files_project: Harness) -> None:
    folder = files_project.root / "config"
    exported = {spec.file: (folder / spec.file).read_bytes() for spec in FILES}
    fuzzed = files_project.root / "fuzzed-config"
    fuzzed.mkdir(exist_ok=True)

    @FUZZ_SETTINGS
    @given(csv_files(exported), st.sampled_from(["plan", "apply"]), st.sampled_from(["json", "text"]))
    def answer(files: dict[str, bytes], action: str, fmt: str) -> None:
        for name, data in files.items():
            (fuzzed / name).write_bytes(data)
        judge(invoke(["config", action, "--config-dir", str(fuzzed), "--format", fmt]))

    with inside(files_project.root, files_project.env()):
        answer()
