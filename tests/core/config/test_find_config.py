"""Finding craft-connector.yml: --config, $ETL_CRAFT_CONFIG, then the cwd and each parent."""

from __future__ import annotations

import os

import pytest

from etl_craft.config import find_config, load_config
from etl_craft.core.errors import ConfigurationError

pytestmark = pytest.mark.unit

VALID = "Orchestration:\n  Mode: local\nEngine:\n  jdbc_url: jdbc:sqlite:engine.db\n"


def touch(path, text: str = VALID):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_explicit_path_wins_over_environment_and_search(tmp_path):
    chosen = touch(tmp_path / "chosen" / "mine.yml")
    touch(tmp_path / "craft-connector.yml")
    environ = {"ETL_CRAFT_CONFIG": str(touch(tmp_path / "env.yml"))}
    assert find_config("chosen/mine.yml", environ, tmp_path) == chosen


def test_explicit_path_that_does_not_exist_is_refused(tmp_path):
    with pytest.raises(ConfigurationError) as caught:
        find_config("missing.yml", {}, tmp_path)
    assert f"--config names {tmp_path / 'missing.yml'}, which does not exist" in str(caught.value)


def test_explicit_folder_is_refused_naming_the_file_to_use(tmp_path):
    with pytest.raises(ConfigurationError) as caught:
        find_config(tmp_path, {}, tmp_path)
    assert "which is not a file" in str(caught.value)
    assert str(tmp_path / "craft-connector.yml") in str(caught.value)


def test_environment_variable_wins_over_search(tmp_path):
    named = touch(tmp_path / "elsewhere" / "x.yml")
    touch(tmp_path / "craft-connector.yml")
    assert find_config(None, {"ETL_CRAFT_CONFIG": str(named)}, tmp_path) == named


def test_environment_variable_naming_a_missing_file_is_refused(tmp_path):
    with pytest.raises(ConfigurationError) as caught:
        find_config(None, {"ETL_CRAFT_CONFIG": "gone.yml"}, tmp_path)
    assert "ETL_CRAFT_CONFIG names" in str(caught.value)


def test_found_in_the_working_directory(tmp_path):
    found = touch(tmp_path / "craft-connector.yml")
    assert find_config(None, {}, tmp_path) == found


def test_found_in_the_etl_craft_subfolder(tmp_path):
    found = touch(tmp_path / "etl-craft" / "craft-connector.yml")
    assert find_config(None, {}, tmp_path) == found


def test_found_in_a_parent_folder_nearest_first(tmp_path):
    touch(tmp_path / "craft-connector.yml")
    nearer = touch(tmp_path / "a" / "etl-craft" / "craft-connector.yml")
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_config(None, {}, deep) == nearer


def test_both_forms_in_one_folder_are_refused_naming_both(tmp_path):
    one = touch(tmp_path / "craft-connector.yml")
    two = touch(tmp_path / "etl-craft" / "craft-connector.yml")
    below = tmp_path / "sub"
    below.mkdir()
    with pytest.raises(ConfigurationError) as caught:
        find_config(None, {}, below)
    message = str(caught.value)
    assert str(one) in message and str(two) in message


def test_none_found_names_the_file_to_create_in_the_working_directory(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigurationError) as caught:
        find_config(None, {}, empty)
    message = str(caught.value)
    assert str(empty / "etl-craft" / "craft-connector.yml") in message
    assert (
        "Create etl-craft/craft-connector.yml here" in message
        and "--config" in message
        and "ETL_CRAFT_CONFIG" in message
    )


def test_symlinked_config_resolves_paths_from_the_links_folder(tmp_path, monkeypatch):
    shared = touch(
        tmp_path / "shared" / "craft-connector.yml",
        "Secrets:\n  Source_type: file\n  Path: .env\n"
        "Orchestration:\n  Log_dir: logs\n"
        "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n"
        "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n",
    )
    link_folder = tmp_path / "project"
    link_folder.mkdir()
    link = link_folder / "craft-connector.yml"
    link.symlink_to(shared)
    (link_folder / ".env").write_text("UNUSED=1\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    found = find_config(None, {}, link_folder)
    assert found == link
    assert found.is_symlink()
    config = load_config(found, {})
    assert config.path == link
    assert config.project_dir == link_folder
    assert config.secrets_settings.path == link_folder / ".env"
    assert config.orchestration.log_dir == link_folder / "logs"
    assert config.engine.jdbc_url == f"jdbc:sqlite:{link_folder / 'engine.db'}"
    assert config.warehouse is not None
    assert config.warehouse.jdbc_url == f"jdbc:duckdb:{link_folder / 'warehouse.duckdb'}"


def test_a_relative_config_path_is_made_absolute_from_the_working_directory(tmp_path, monkeypatch):
    touch(tmp_path / "p" / "craft-connector.yml")
    monkeypatch.chdir(tmp_path)
    config = load_config(os.path.join("p", "craft-connector.yml"), {})
    assert config.project_dir == tmp_path / "p"
    assert config.engine.jdbc_url == f"jdbc:sqlite:{tmp_path / 'p' / 'engine.db'}"


def test_loading_a_missing_file_names_it(tmp_path):
    with pytest.raises(ConfigurationError) as caught:
        load_config(tmp_path / "craft-connector.yml", {})
    assert f"{tmp_path / 'craft-connector.yml'}: no such file" in str(caught.value)


def test_a_config_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "craft-connector.yml"
    path.write_bytes(b"Orchestration:\n  Name: \xff\xfe\n")
    with pytest.raises(ConfigurationError) as caught:
        load_config(path, {})
    assert str(caught.value) == (
        f"{path}: cannot be read: found bytes that are not UTF-8 at line 2, column 9 (byte 0xff); "
        "expected a UTF-8 text file. Save it as UTF-8"
    )
