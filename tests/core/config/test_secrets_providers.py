"""Secrets providers (S7.E): AWS Secrets Manager served by a local moto server, caching, a provider that
does not answer, the keys a provider reads, and a plug-in provider found through its entry point."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from etl_craft.config import load_config
from etl_craft.core.errors import ConfigurationError
from tests.fixtures.aws import REGION, SecretsManager
from tests.fixtures.cli import run_cli

pytestmark = pytest.mark.unit

BODY = (
    "Orchestration:\n  Mode: local\nEngine:\n  jdbc_url: jdbc:sqlite:engine.db\nDocs_site:\n  Authtoken: DOCS_TOKEN\n"
)
TOKEN = "docs-token-61f0c2a9"


def write(root: Path, secrets: str, body: str = BODY) -> Path:
    path = root / "craft-connector.yml"
    path.write_text(secrets + body, encoding="utf-8")
    return path


def refused(path: Path, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigurationError) as caught:
        load_config(path, environ if environ is not None else dict(os.environ))
    return str(caught.value)


def test_a_secret_field_is_read_from_the_provider_alone_and_remembered_for_masking(
    tmp_path: Path, secrets_manager: SecretsManager
) -> None:
    secrets_manager.put("DOCS_TOKEN", TOKEN)
    path = write(tmp_path, secrets_manager.section())
    # The process environment does not override a provider: a stray variable can't replace the secret.
    config = load_config(path, {**os.environ, "DOCS_TOKEN": "from-the-environment"})
    assert config.docs_site is not None and config.docs_site.authtoken_var == "DOCS_TOKEN"
    assert config.secret("DOCS_TOKEN") == TOKEN
    assert config.resolved_secrets() == {TOKEN}
    assert config.secrets_settings.options == (("Region", REGION), ("Endpoint_url", secrets_manager.endpoint_url))
    assert TOKEN not in repr(config) and TOKEN not in repr(config.secrets)
    assert "AWS Secrets Manager (region eu-west-1, at http://127.0.0.1:" in repr(config.secrets)


def test_a_profile_specific_secret_wins_and_ordinary_settings_still_read_the_environment(
    tmp_path: Path, secrets_manager: SecretsManager
) -> None:
    secrets_manager.put("DOCS_TOKEN", TOKEN)
    secrets_manager.put("DOCS_PROD_TOKEN", "prod-token-77aa01")
    secrets_manager.put("ETL_CRAFT_PROFILE", "dev")  # not read: Profile is an ordinary setting
    path = write(tmp_path, secrets_manager.section(Profile="ETL_CRAFT_PROFILE"))
    config = load_config(path, {**os.environ, "ETL_CRAFT_PROFILE": "prod"})
    assert config.secrets_settings.profile == "prod"
    assert config.docs_site is not None and config.docs_site.authtoken_var == "DOCS_PROD_TOKEN"
    assert config.secret("DOCS_PROD_TOKEN") == "prod-token-77aa01"


def test_a_missing_or_empty_secret_names_the_provider(tmp_path: Path, secrets_manager: SecretsManager) -> None:
    path = write(tmp_path, secrets_manager.section())
    message = refused(path)
    assert message.startswith(
        "craft-connector.yml: Docs_site.Authtoken (line 10): secret DOCS_TOKEN is not in AWS Secrets Manager"
        f" (region eu-west-1, at {secrets_manager.endpoint_url}): expected a secret named DOCS_TOKEN in"
    )
    assert message.endswith("Create the secret DOCS_TOKEN there, or correct the name")
    secrets_manager.put("DOCS_TOKEN", "   ")
    assert "secret DOCS_TOKEN in AWS Secrets Manager (region eu-west-1" in refused(path)
    assert "is empty: expected a secret that is not empty or blank" in refused(path)


@pytest.mark.parametrize(("cache", "changed"), [(3600, False), (0, True)])
def test_answers_are_kept_for_cache_seconds(
    tmp_path: Path, secrets_manager: SecretsManager, cache: int, changed: bool
) -> None:
    secrets_manager.put("DOCS_TOKEN", TOKEN)
    config = load_config(write(tmp_path, secrets_manager.section(Cache_seconds=cache)), dict(os.environ))
    secrets_manager.put("DOCS_TOKEN", "rotated-token-3b9d")
    assert config.secret("DOCS_TOKEN") == ("rotated-token-3b9d" if changed else TOKEN)
    assert config.resolved_secrets() == ({TOKEN, "rotated-token-3b9d"} if changed else {TOKEN})


def test_a_kept_answer_is_asked_again_once_cache_seconds_have_passed(
    tmp_path: Path, secrets_manager: SecretsManager
) -> None:
    secrets_manager.put("DOCS_TOKEN", TOKEN)
    # 3 s, not 1: on a loaded machine more than a second can pass between loading and the first ask.
    config = load_config(write(tmp_path, secrets_manager.section(Cache_seconds=3)), dict(os.environ))
    secrets_manager.put("DOCS_TOKEN", "rotated-token-3b9d")
    assert config.secret("DOCS_TOKEN") == TOKEN
    time.sleep(3.2)
    assert config.secret("DOCS_TOKEN") == "rotated-token-3b9d"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers a request."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("kind", ["silent", "closed"])
def test_a_provider_that_does_not_answer_stops_the_command_with_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, silent_port: int, kind: str
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    port = silent_port if kind == "silent" else closed_port()
    endpoint = f"http://127.0.0.1:{port}"
    secrets = (
        "Secrets:\n  Source_type: aws-secrets-manager\n  Region: eu-west-1\n"
        f"  Endpoint_url: {endpoint}\n  Timeout_seconds: 1\n"
    )
    write(tmp_path, secrets)
    result = run_cli("list", env={**os.environ, "ETL_CRAFT_CONFIG": str(tmp_path / "craft-connector.yml")}, timeout=60)
    assert result.returncode == 3, result
    assert "Traceback" not in result.stderr
    (line,) = [text for text in result.stderr.splitlines() if text.startswith("error:")]
    assert line == (
        "error: craft-connector.yml: Docs_site.Authtoken (line 11): Secrets: AWS Secrets Manager (region eu-west-1,"
        f" at {endpoint}): found no answer within 1 s while reading secret DOCS_TOKEN "
        f"({'ReadTimeoutError' if kind == 'silent' else 'EndpointConnectionError'}); expected a Secrets Manager"
        " endpoint that answers. Check that Secrets.Endpoint_url (or the region's endpoint) is reachable from this"
        " host, or raise Secrets.Timeout_seconds"
    )


def test_no_credentials_is_a_clear_error(tmp_path: Path, secrets_manager: SecretsManager, monkeypatch) -> None:
    path = write(tmp_path, secrets_manager.section())
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    environ["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "none")
    environ["AWS_CONFIG_FILE"] = str(tmp_path / "none")
    environ["AWS_EC2_METADATA_DISABLED"] = "true"
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    message = refused(path, environ)
    assert "Secrets: AWS Secrets Manager (region eu-west-1" in message
    assert "found no AWS credentials" in message and "AWS_ACCESS_KEY_ID" in message


@pytest.mark.parametrize(
    ("secrets", "parts"),
    [
        (
            "Secrets:\n  Source_type: environment\n  Region: eu-west-1\n",
            ("Secrets.Region (line 3): unknown key", "one of Source_type, Path, Profile, Cache_seconds"),
        ),
        (
            "Secrets:\n  Cache_seconds: 60\n",
            (
                "Secrets.Cache_seconds (line 2): is read only with a secrets provider, not with Source_type: environment",
            ),
        ),
        (
            "Secrets:\n  Source_type: aws-secrets-manager\n  Path: .env\n",
            ("Secrets.Path (line 3): is read only with Source_type: file",),
        ),
        (
            "Secrets:\n  Source_type: aws-secrets-manager\n  Region: Ireland\n",
            ("Secrets.Region (line 3): found 'Ireland'; expected an AWS region such as eu-west-1",),
        ),
        (
            "Secrets:\n  Source_type: aws-secrets-manager\n  Endpoint_url: localhost:4566\n",
            ("Secrets.Endpoint_url (line 3): found 'localhost:4566'", "an http:// or https:// URL"),
        ),
        (
            "Secrets:\n  Source_type: aws-secrets-manager\n  Timeout_seconds: 0\n",
            ("Secrets.Timeout_seconds (line 3): found '0'", "from 1 to 3600"),
        ),
        (
            "Secrets:\n  Source_type: aws-secret-manager\n",
            ("Secrets.Source_type (line 2): found 'aws-secret-manager'", "did you mean aws-secrets-manager?"),
        ),
    ],
)
def test_provider_keys_are_checked(tmp_path: Path, secrets: str, parts: tuple[str, ...]) -> None:
    message = refused(write(tmp_path, secrets, BODY.replace("Docs_site:\n  Authtoken: DOCS_TOKEN\n", "")))
    for part in parts:
        assert part in message, message


def test_source_type_is_read_in_any_case_with_dashes_or_underscores(
    tmp_path: Path, secrets_manager: SecretsManager
) -> None:
    secrets_manager.put("DOCS_TOKEN", TOKEN)
    section = secrets_manager.section().replace("aws-secrets-manager", "AWS_Secrets_Manager")
    config = load_config(write(tmp_path, section), dict(os.environ))
    assert config.secrets_settings.source_type == "aws-secrets-manager"


def test_boto3_is_imported_only_when_the_provider_is_configured(tmp_path: Path) -> None:
    write(tmp_path, "Secrets:\n  Source_type: environment\n", BODY.replace("Authtoken: DOCS_TOKEN", "Domain: x"))
    code = (
        "import sys; from pathlib import Path; from etl_craft.config import load_config;"
        f"load_config(Path({str(tmp_path / 'craft-connector.yml')!r}));"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- a plug-in provider --------------------------------------------------------------------------

PLUGIN = '''\
"""A provider read from a JSON file: what a Vault plug-in would look like, without a network."""

import json
from pathlib import Path

from etl_craft.config.providers import SecretsProvider
from etl_craft.core.errors import ConfigurationError


class JsonFileProvider(SecretsProvider):
    keys = ("File",)
    required = ("File",)

    def __init__(self, settings):
        super().__init__(settings)
        self.path = settings.project_dir / settings.options["File"]
        if self.path.suffix != ".json":
            raise settings.error("File", found=repr(settings.options["File"]), expected="a .json file")

    @property
    def description(self):
        return f"the JSON file {self.path.name}"

    def get(self, name):
        if not self.path.exists():
            raise ConfigurationError(f"Secrets: {self.description}", found="no such file", remedy="create it")
        return json.loads(self.path.read_text()).get(name)
'''


@pytest.fixture
def plugin_path(tmp_path: Path) -> str:
    """A distribution declaring the entry point `json-file` of etl_craft.secrets, on PYTHONPATH."""
    site = tmp_path / "site"
    (site / "jsonfile_secrets-1.0.dist-info").mkdir(parents=True)
    (site / "jsonfile_secrets.py").write_text(PLUGIN)
    (site / "jsonfile_secrets-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: jsonfile-secrets\nVersion: 1.0\n"
    )
    (site / "jsonfile_secrets-1.0.dist-info" / "entry_points.txt").write_text(
        "[etl_craft.secrets]\njson-file = jsonfile_secrets:JsonFileProvider\n"
    )
    return str(site)


def test_a_plug_in_provider_is_found_by_its_entry_point_and_reads_its_own_keys(
    tmp_path: Path, plugin_path: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "vault.json").write_text('{"DOCS_TOKEN": "plugin-token-55e1"}')
    path = write(project, "Secrets:\n  Source_type: json-file\n  File: vault.json\n  Cache_seconds: 0\n")
    env = {**os.environ, "PYTHONPATH": plugin_path, "ETL_CRAFT_CONFIG": str(path)}
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from etl_craft.config import load_config
        config = load_config(Path({str(path)!r}))
        print(config.secrets_settings.source_type, config.secrets_settings.options, config.secret("DOCS_TOKEN"))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert done.stdout.strip() == "json-file (('File', 'vault.json'),) plugin-token-55e1", done.stderr
    doctor = run_cli("doctor", env=env)
    assert "1 secret variable(s) set in the JSON file vault.json, kept 0 s: DOCS_TOKEN (Docs_site.Authtoken)" in (
        doctor.stdout
    ), doctor

    path.write_text(path.read_text().replace("  File: vault.json\n", ""))
    missing = run_cli("list", env=env)
    assert missing.returncode == 3
    assert "Secrets.File: missing" in missing.stderr and "File, which Source_type json-file needs" in missing.stderr
    path.write_text(path.read_text().replace("Source_type: json-file\n", "Source_type: json-file\n  Region: x\n"))
    unknown = run_cli("list", env=env)
    assert "Secrets.Region (line 3): unknown key" in unknown.stderr
    assert "one of Source_type, Path, Profile, Cache_seconds, Timeout_seconds, File" in unknown.stderr


def test_an_unknown_source_type_lists_the_installed_providers(tmp_path: Path, plugin_path: str) -> None:
    path = write(tmp_path, "Secrets:\n  Source_type: vault\n")
    result = run_cli("list", env={**os.environ, "PYTHONPATH": plugin_path, "ETL_CRAFT_CONFIG": str(path)})
    assert result.returncode == 3
    assert (
        "Secrets.Source_type (line 2): found 'vault'; expected one of environment, file, aws-secrets-manager,"
        " json-file" in result.stderr
    )
