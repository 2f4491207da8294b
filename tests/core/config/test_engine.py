"""The Engine section: SQLite and PostgreSQL URLs, schema, Name and login rules."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit

PG = "jdbc:postgresql://db.example.com:5432/etl"
SECRETS = {"ENGINE_SECRET": "engine-pw-1"}


def engine(lines: str) -> str:
    return "Orchestration:\n  Mode: local\nEngine:\n" + "".join(f"  {line}\n" for line in lines.splitlines())


def test_relative_sqlite_file_is_resolved_beside_the_config_and_the_url_rewritten(project):
    config = project.load(engine("jdbc_url: jdbc:sqlite:data/engine.db"))
    assert config.engine.jdbc_url == f"jdbc:sqlite:{project.root / 'data' / 'engine.db'}"
    assert config.engine.schema == "main"
    assert config.engine.profile is None
    assert config.engine.where == "Engine"


def test_absolute_sqlite_file_is_kept(project, tmp_path):
    config = project.load(engine(f"jdbc_url: jdbc:sqlite:{tmp_path / 'abs.db'}\nschema: anything"))
    assert config.engine.jdbc_url == f"jdbc:sqlite:{tmp_path / 'abs.db'}"
    assert config.engine.schema == "anything"


@pytest.mark.parametrize(
    "url",
    [
        "jdbc:sqlite:",
        "jdbc:sqlite::memory:",
        "jdbc:sqlite:file::memory:?cache=shared",
        "jdbc:sqlite:file:x?mode=memory",
    ],
)
def test_in_memory_sqlite_is_refused(project, url):
    message = project.refuse(engine(f'jdbc_url: "{url}"'))
    assert "craft-connector.yml: Engine.jdbc_url (line 4): an in-memory SQLite database" in message
    assert "each task runs in its own process" in message


def test_sqlite_file_uri_is_refused_asking_for_a_plain_path(project):
    message = project.refuse(engine("jdbc_url: jdbc:sqlite:file:engine.db"))
    assert "Write the file path without file:" in message


def test_missing_jdbc_url_is_named(project):
    message = project.refuse(engine("schema: main"))
    assert "Engine.jdbc_url: missing (block Engine starts at line 3)" in message
    assert "jdbc:sqlite:<file> or jdbc:postgresql://host[:port]/database[?settings]" in message


@pytest.mark.parametrize(
    "url",
    [
        "jdbc:mysql://db/etl",
        "postgresql://db/etl",
        "jdbc:postgres://db/etl",
        "jdbc:postgresql://db:0/etl",
        "jdbc:postgresql://db:99999/etl",
        "jdbc:postgresql://db/",
        "jdbc:postgresql:///etl",
    ],
)
def test_other_engine_urls_are_refused_naming_the_supported_forms(project, url):
    message = project.refuse(engine(f"jdbc_url: {url}\nschema: etl"))
    assert "Engine.jdbc_url (line 4)" in message
    assert "jdbc:postgresql://host[:port]/database" in message


def test_name_must_match_the_url(project):
    message = project.refuse(engine("Name: Postgres\njdbc_url: jdbc:sqlite:engine.db"))
    assert "Engine.Name (line 4): does not match jdbc_url, which names a SQLite database" in message
    assert "expected Name: SQLite" in message
    config = project.load(engine("Name: sqlite\njdbc_url: jdbc:sqlite:engine.db"))
    assert config.engine.name == "SQLite"


def test_sqlite_refuses_login_keys(project):
    message = project.refuse(engine("jdbc_url: jdbc:sqlite:engine.db\nuser: etl"))
    assert "Engine.user (line 5): is not used: a SQLite file has no login" in message


def test_postgres_needs_a_schema(project):
    message = project.refuse(engine(f"jdbc_url: {PG}"))
    assert "Engine.schema: missing" in message
    assert "existing PostgreSQL schema" in message


def test_postgres_with_secret_and_no_auth_mode_is_password(project):
    config = project.load(engine(f"jdbc_url: {PG}\nschema: etl\nuser: etl\nsecret: ENGINE_SECRET"), SECRETS)
    assert config.engine.auth_mode == "password"
    assert config.engine.user == "etl"
    assert config.engine.secret_var == "ENGINE_SECRET"
    assert config.engine.name is None


def test_postgres_without_secret_is_trust_or_peer(project):
    config = project.load(engine(f"Name: Postgres\njdbc_url: {PG}\nschema: etl\nuser: etl"))
    assert config.engine.auth_mode is None
    assert config.engine.secret_var is None
    assert config.engine.name == "Postgres"


def test_password_mode_needs_user_and_secret(project):
    message = project.refuse(
        engine(f"jdbc_url: {PG}\nschema: etl\nauth_mode: password\nsecret: ENGINE_SECRET"), SECRETS
    )
    assert "Engine.user: missing" in message
    assert "user, secret for auth_mode password" in message


def test_key_file_mode_resolves_files_and_takes_an_optional_passphrase(project):
    config = project.load(
        engine(
            f"jdbc_url: {PG}\nschema: etl\nuser: etl\nauth_mode: key_file\n"
            "key_file: certs/client.key\ncert_file: certs/client.crt\nsecret: ENGINE_SECRET"
        ),
        SECRETS,
    )
    assert config.engine.auth_mode == "key_file"
    assert config.engine.key_file == project.root / "certs" / "client.key"
    assert config.engine.cert_file == project.root / "certs" / "client.crt"
    assert config.engine.secret_var == "ENGINE_SECRET"


def test_token_mode_reads_the_token_from_secret(project):
    config = project.load(
        engine(f"jdbc_url: {PG}\nschema: etl\nuser: etl\nauth_mode: TOKEN\nsecret: ENGINE_SECRET"), SECRETS
    )
    assert config.engine.auth_mode == "token"
    assert config.engine.secret_var == "ENGINE_SECRET"


def test_key_file_without_auth_mode_is_refused(project):
    message = project.refuse(engine(f"jdbc_url: {PG}\nschema: etl\nuser: etl\nkey_file: client.key"))
    assert "Engine.key_file (line 7): is not used by no auth_mode and no secret" in message
    assert "set auth_mode: key_file" in message


def test_a_key_the_mode_does_not_use_is_refused(project):
    message = project.refuse(
        engine(f"jdbc_url: {PG}\nschema: etl\nuser: etl\nauth_mode: token\nsecret: ENGINE_SECRET\ncert_file: c.crt"),
        SECRETS,
    )
    assert "Engine.cert_file (line 9): is not used by auth_mode token" in message


@pytest.mark.parametrize("mode", ["oauth", "sso", "STS"])
def test_unverified_auth_modes_are_refused_naming_the_supported_ones(project, mode):
    message = project.refuse(engine(f"jdbc_url: {PG}\nschema: etl\nuser: etl\nauth_mode: {mode}"))
    assert f"Engine.auth_mode (line 7): {mode} is not supported in this release" in message
    assert "password, key_file, token" in message


def test_an_unknown_auth_mode_lists_only_the_supported_ones(project):
    message = project.refuse(engine(f"jdbc_url: {PG}\nschema: etl\nuser: etl\nauth_mode: kerberos"))
    assert "found 'kerberos'; expected one of password, key_file, token" in message


def test_fields_of_unsupported_modes_are_refused_with_the_reason(project):
    message = project.refuse(engine(f"jdbc_url: {PG}\nschema: etl\nclient_id: abc"))
    assert "Engine.client_id (line 6): unknown key" in message
    assert "auth_mode oauth, sso or sts, which this release does not support" in message


def test_profiles_and_profile_names_appear_in_where(project):
    config = project.load(
        "Secrets:\n  Profile: prod\nOrchestration: {}\nEngine:\n  prod:\n    jdbc_url: jdbc:sqlite:p.db\n"
    )
    assert config.engine.profile == "prod"
    assert config.engine.where == "Engine.prod"
