"""Strict YAML: duplicate keys are refused with their section path and both lines."""

from __future__ import annotations

import pytest

from etl_craft.config.yaml_strict import parse_yaml
from etl_craft.core.errors import ConfigurationError

pytestmark = pytest.mark.unit


def test_two_dev_blocks_are_refused_naming_section_and_both_lines(project):
    message = project.refuse(
        """\
        Orchestration:
          Mode: local
        Engine:
          Profile: dev
          dev:
            jdbc_url: jdbc:sqlite:one.db
          dev:
            jdbc_url: jdbc:sqlite:two.db
        """
    )
    assert "craft-connector.yml" in message
    assert "duplicate key 'dev' in Engine" in message
    assert "lines 5 and 7" in message


def test_duplicate_key_inside_a_profile_names_the_profile_path(project):
    message = project.refuse(
        """\
        Orchestration:
          Mode: local
        Engine:
          Profile: dev
          dev:
            jdbc_url: jdbc:sqlite:one.db
            schema: main
            jdbc_url: jdbc:sqlite:two.db
        """
    )
    assert "duplicate key 'jdbc_url' in Engine.dev (lines 6 and 8)" in message


def test_duplicate_section_is_refused_at_top_level():
    with pytest.raises(ConfigurationError) as caught:
        parse_yaml("Engine: {}\nOrchestration: {}\nEngine: {}\n", "craft-connector.yml")
    assert "duplicate key 'Engine' in (top level) (lines 1 and 3)" in str(caught.value)


def test_syntax_error_names_file_and_line():
    with pytest.raises(ConfigurationError) as caught:
        parse_yaml("Engine:\n  jdbc_url: [unclosed\nOrchestration: {}\n", "craft-connector.yml")
    message = str(caught.value)
    assert message.startswith("craft-connector.yml (line")
    assert "not valid YAML" in message


def test_lines_and_written_text_are_kept_for_later_messages():
    document = parse_yaml("Orchestration:\n  Dependency_gates: off\n  port: 0587\n", "x.yml")
    assert document.data == {"Orchestration": {"Dependency_gates": False, "port": "0587"}}
    assert document.line(("Orchestration", "Dependency_gates")) == 2
    assert document.text(("Orchestration", "Dependency_gates")) == "off"


def test_keys_stay_text_so_profiles_named_like_booleans_survive():
    document = parse_yaml("Engine:\n  on:\n    a: 1\n  2024:\n    a: 2\n", "x.yml")
    assert document.data == {"Engine": {"on": {"a": 1}, "2024": {"a": 2}}}


def test_merge_keys_let_a_profile_override_an_anchor_without_counting_as_duplicates():
    document = parse_yaml(
        "base: &base\n  user: etl\n  schema: a\nprod:\n  <<: *base\n  schema: b\n",
        "x.yml",
    )
    assert document.data["prod"] == {"user": "etl", "schema": "b"}
    assert document.line(("prod", "schema")) == 6
    assert document.line(("prod", "user")) == 2


def test_a_key_that_is_not_text_is_refused():
    with pytest.raises(ConfigurationError) as caught:
        parse_yaml("Engine:\n  ? [a, b]\n  : 1\n", "craft-connector.yml")
    assert "Engine (line 2): a key that is not plain text" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Engine:\n  schema: ma\x1bin\n",
            "craft-connector.yml (line 2, column 13): not valid YAML: found the character U+001B; expected printable "
            "text (YAML allows no control characters but tab and line breaks)",
        ),
        (
            "Engine:\n  schema: " + "[" * 3000 + "]" * 3000 + "\n",
            "craft-connector.yml: not valid YAML for etl-craft: found lists or mappings nested hundreds of levels "
            "deep; expected the few levels craft-connector.yml has",
        ),
        (
            "Orchestration:\n  Retries: " + "9" * 5000 + "\n",
            "craft-connector.yml: a value that can't be read: found Exceeds the limit (4300 digits) for integer "
            "string conversion: value has 5000 digits; expected numbers of a sensible size",
        ),
    ],
    ids=["control character", "deep nesting", "huge number"],
)
def test_yaml_python_cant_hold_is_a_configuration_error(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_yaml(text, "craft-connector.yml")
    assert caught.value.message.startswith(message)
