"""SecretSource: the .env format, precedence, empty values, near misses and redaction support."""

from __future__ import annotations

import pytest

from etl_craft.config.secrets import SecretSource, read_env_file
from etl_craft.core.errors import ConfigurationError

pytestmark = pytest.mark.unit


def write_env(tmp_path, text: str, *, bom: bool = False):
    path = tmp_path / ".env"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def test_bom_export_comments_and_quotes(tmp_path):
    path = write_env(
        tmp_path,
        "export ENGINE_SECRET=first\n"
        "# a comment\n"
        "\n"
        "   \n"
        "export\tTABBED='single quoted'\n"
        'DOUBLE="double # not a comment"\n'
        "PLAIN = spaced value  \n"
        "MISMATCHED='kept\n",
        bom=True,
    )
    assert read_env_file(path) == {
        "ENGINE_SECRET": "first",
        "TABBED": "single quoted",
        "DOUBLE": "double # not a comment",
        "PLAIN": "spaced value",
        "MISMATCHED": "'kept",
    }


def test_first_name_after_a_bom_is_found_by_the_source(tmp_path):
    source = SecretSource({}, write_env(tmp_path, "ENGINE_SECRET=pw\n", bom=True))
    assert source.has("ENGINE_SECRET")
    assert source.value("ENGINE_SECRET") == "pw"


def test_a_line_without_equals_is_refused_by_number_without_echoing_it(tmp_path):
    path = write_env(tmp_path, "A=1\nhunter2\n")
    with pytest.raises(ConfigurationError) as caught:
        read_env_file(path)
    message = str(caught.value)
    assert f"{path}: line 2 is not a NAME=value line" in message
    assert "hunter2" not in message


def test_a_name_set_twice_is_refused_with_both_lines(tmp_path):
    with pytest.raises(ConfigurationError) as caught:
        read_env_file(write_env(tmp_path, "A=1\n# x\nA=2\n"))
    assert "variable A is set twice (lines 1 and 3)" in str(caught.value)


def test_a_missing_file_names_its_path(tmp_path):
    with pytest.raises(ConfigurationError) as caught:
        SecretSource({}, tmp_path / "nowhere.env")
    assert f"{tmp_path / 'nowhere.env'}: no such file" in str(caught.value)


def test_the_process_environment_wins_over_the_file(tmp_path):
    source = SecretSource({"ENGINE_SECRET": "from-env"}, write_env(tmp_path, "ENGINE_SECRET=from-file\n"))
    assert source.value("ENGINE_SECRET") == "from-env"
    assert source.origin("ENGINE_SECRET") == "the process environment"


@pytest.mark.parametrize("written", ["ENGINE_DEV_SECRET=", "ENGINE_DEV_SECRET=   ", 'ENGINE_DEV_SECRET=""'])
def test_an_empty_or_blank_secret_in_the_file_is_refused(tmp_path, written):
    source = SecretSource({}, write_env(tmp_path, written + "\n"))
    with pytest.raises(ConfigurationError) as caught:
        source.value("ENGINE_DEV_SECRET")
    assert "variable ENGINE_DEV_SECRET in .env is empty" in str(caught.value)


def test_a_whitespace_only_secret_in_the_environment_is_refused():
    with pytest.raises(ConfigurationError) as caught:
        SecretSource({"ENGINE_SECRET": " \t"}).value("ENGINE_SECRET")
    assert "variable ENGINE_SECRET in the process environment holds only whitespace" in str(caught.value)


def test_an_empty_environment_variable_shadows_the_file_and_says_so(tmp_path):
    source = SecretSource({"ENGINE_SECRET": ""}, write_env(tmp_path, "ENGINE_SECRET=pw\n"))
    with pytest.raises(ConfigurationError) as caught:
        source.value("ENGINE_SECRET")
    message = str(caught.value)
    assert "variable ENGINE_SECRET in the process environment is empty" in message
    assert "the environment wins over" in message


def test_not_set_lists_near_miss_names_from_both_places(tmp_path):
    source = SecretSource({"ENGINE_SECRT": "x", "HOME": "/root"}, write_env(tmp_path, "ENGIN_SECRET=y\n"))
    with pytest.raises(ConfigurationError) as caught:
        source.value("ENGINE_SECRET", wanted_by="craft-connector.yml: Engine.secret")
    message = str(caught.value)
    assert message.startswith("craft-connector.yml: Engine.secret: variable ENGINE_SECRET is not set")
    assert "ENGINE_SECRT" in message
    assert "ENGIN_SECRET" in message
    assert "HOME" not in message


def test_resolved_values_records_every_value_handed_out():
    source = SecretSource({"A": "alpha", "B": "beta", "C": "gamma"})
    assert source.resolved_values() == frozenset()
    source.value("A")
    source.value("B")
    assert source.setting("C") == "gamma"  # an ordinary setting is not a secret
    assert source.resolved_values() == {"alpha", "beta"}


def test_repr_never_shows_values(tmp_path):
    source = SecretSource({"ENGINE_SECRET": "env-value-1"}, write_env(tmp_path, "WAREHOUSE_SECRET=file-value-2\n"))
    source.value("ENGINE_SECRET")
    source.value("WAREHOUSE_SECRET")
    for text in (repr(source), str(source)):
        assert "env-value-1" not in text
        assert "file-value-2" not in text
        assert "resolved=2" in text
