"""One throwaway project per module with a pipeline, a run and a token of every kind, served
in-process through FastAPI's TestClient (real HTTP semantics, real Engine DB, no sockets)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from etl_craft.cli.main import main
from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind
from etl_craft.engine.records.api_tokens import insert_token
from etl_craft.engine.schema import migrations
from etl_craft.services.access.tokens import TOKEN_PREFIX, create_token, digest, revoke_token
from etl_craft.services.access.users import create_user, disable_user
from etl_craft.services.context import OperationContext
from etl_craft_server.api.app import create_app
from tests.fixtures import postgres as pg
from tests.fixtures.harness import Harness, TaskSpec, pipeline_sql
from tests.fixtures.project import Project

ADMIN = Actor("admin@test", ActorKind.HUMAN)
# People signing in with a password (HTTP Basic): an operator, and an admin that was disabled.
USERS = {"user": ("olga", "a long passphrase 1"), "disabled": ("dora", "a long passphrase 2")}
SECRET = "s3cr3t-value"  # a sensitive task parameter's value: no response may carry it
LOG_LINES = ["héllo wörld", "second line"]  # what the extract task prints into its log file


def cli_json(project: Project, *args: str, refused: bool = False) -> Any:
    """`etl-craft <args> --format json` in this process (a subprocess costs seconds here): its document
    (with `refused`, the error document of a command that must fail)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main([*args, "--config", str(project.config_path), "--format", "json"])
    assert (status != 0) if refused else (status == 0), out.getvalue()
    return json.loads(out.getvalue())


@dataclass
class Api:
    client: TestClient
    harness: Harness
    ctx: OperationContext
    tokens: dict[str, str]  # kind -> token value (viewer, operator, developer, admin, revoked, expired, ci-bot)
    project: Project

    def cli(self, *args: str, refused: bool = False) -> Any:
        return cli_json(self.project, *args, refused=refused)

    def headers(self, kind: str | None) -> dict[str, str]:
        if kind is None:
            return {}
        if kind in USERS:
            name, password = USERS[kind]
            return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}
        return {"Authorization": f"Bearer {self.tokens[kind]}"}

    def get(self, path: str, kind: str | None = "viewer", **params: object):  # type: ignore[no-untyped-def]
        return self.client.get(path, headers=self.headers(kind), params=params)

    def post(self, path: str, body: object, kind: str | None = "operator"):  # type: ignore[no-untyped-def]
        return self.client.post(path, headers=self.headers(kind), json=body)


def _tokens(ctx: OperationContext) -> dict[str, str]:
    with acting_as(ADMIN):
        made = {
            role: create_token(ctx, f"{role}-token", role, None).value
            for role in ("viewer", "operator", "developer", "admin")
        }
        made["ci-bot"] = create_token(ctx, "ci-bot", "operator", "90d").value
        gone = create_token(ctx, "gone", "admin", None)
        made["revoked"] = gone.value
        revoke_token(ctx, gone.token.token_id)
        create_user(ctx, USERS["user"][0], "operator", USERS["user"][1])
        create_user(ctx, USERS["disabled"][0], "admin", USERS["disabled"][1])
        disable_user(ctx, USERS["disabled"][0])
        # An expired token can't be created through the service (it refuses a past expiry).
        made["expired"] = TOKEN_PREFIX + "expired-for-the-test"
        now = utc_now()
        insert_token(
            ctx.db,
            name="old",
            token_sha256=digest(made["expired"]),
            role="admin",
            actor=ADMIN,
            now=now - timedelta(days=2),
            expires_at=now - timedelta(days=1),
        )
    return made


def build_api(root: Path, dialect: str, pg_database: str | None) -> tuple[Api, Project]:
    """`pg_database` is a copy of the session's initialised template; a SQLite file is initialised here."""
    project = Project(root, dialect, pg_database)
    project.write_config()
    db = project.open_db(create=True)
    if pg_database is None:
        migrations.init_db(db)
    harness = Harness(project)
    tasks = [TaskSpec("extract", params={"print": LOG_LINES}), TaskSpec("load", parameters={"API_TOKEN": SECRET})]
    (root / "migrations" / "0001_sales.sql").write_text(pipeline_sql("sales", tasks, [("load", "extract", "SUCCESS")]))
    cli_json(project, "migrate")
    ctx = OperationContext(config=project.load(), db=db, actor=ADMIN)
    tokens = _tokens(ctx)
    client = TestClient(create_app(ctx.config, db), raise_server_exceptions=False)
    return Api(client, harness, ctx, tokens, project), project


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """A SQLite project shared by a module's tests (the role matrix and input checks only read, or
    are refused before they change anything)."""
    built, project = build_api(tmp_path_factory.mktemp("api"), "sqlite", None)
    yield built
    built.harness.close()
    project.close()


@pytest.fixture(
    params=[pytest.param("sqlite", marks=pytest.mark.sqlite), pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fresh_api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    """A project of its own on each dialect, for tests that change runs."""
    if request.param == "postgresql":
        with pg.throwaway_database(template=request.getfixturevalue("pg_template")) as name:
            built, project = build_api(tmp_path, "postgresql", name)
            yield built
            built.harness.close()
            project.close()
    else:
        built, project = build_api(tmp_path, "sqlite", None)
        yield built
        built.harness.close()
        project.close()
