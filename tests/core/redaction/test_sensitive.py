"""Redaction.Sensitive_patterns: which task parameters are hidden, how they are shown, what logs mask (S7.C)."""

from __future__ import annotations

import json

import pytest

from etl_craft.core.sensitive import DEFAULT_PATTERNS, SensitiveNames

pytestmark = pytest.mark.unit

DEFAULT = SensitiveNames()
TOKEN = "tok-5f4e3d2c1b"
KEY = "key-0a9b8c7d6e"
PASSWORD = "pw-1029384756"


def test_the_default_patterns_match_whole_names_in_any_case() -> None:
    assert DEFAULT.patterns == DEFAULT_PATTERNS == ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*KEY*")
    for name in ("API_TOKEN", "token", "client_secret", "DB_PASSWORD", "api_key", "KEYRING", "Monkey"):
        assert DEFAULT.matches(name), name
    for name in ("SOURCE_URL", "TOKE", "PASS", "rows"):
        assert not DEFAULT.matches(name), name
    custom = SensitiveNames(("API_?", "[xy]_SIGN*"))
    assert custom.matches("api_1") and custom.matches("Y_SIGNATURE")
    assert not custom.matches("API_12") and not custom.matches("API_TOKEN")
    assert not SensitiveNames(()).matches("API_TOKEN")  # an empty list hides nothing


def test_a_python_task_s_own_parameters_and_input_params_keys_are_hidden_at_any_depth() -> None:
    params = {
        "SCRIPT_NAME": "crm/token_refresh.py",
        "API_TOKEN": TOKEN,
        "REGION": "eu-west-1",
        "INPUT_PARAMS": json.dumps({"client": "acme", "api_key": KEY, "auth": {"user": "etl", "Password": PASSWORD}}),
    }
    shown = DEFAULT.shown("PYTHON", params)
    assert shown["SCRIPT_NAME"] == "crm/token_refresh.py"  # etl-craft's own setting, never hidden
    assert shown["API_TOKEN"] == "***"
    assert shown["REGION"] == "eu-west-1"
    assert json.loads(shown["INPUT_PARAMS"]) == {
        "client": "acme",
        "api_key": "***",
        "auth": {"user": "etl", "Password": "***"},
    }
    assert DEFAULT.values("PYTHON", params) == {TOKEN, KEY, PASSWORD}


def test_a_whole_sensitive_subtree_is_hidden_and_its_strings_masked() -> None:
    params = {"INPUT_PARAMS": json.dumps({"tokens": ["first-token-1", {"second": "second-token-2"}], "n": 3})}
    assert json.loads(DEFAULT.shown("PYTHON", params)["INPUT_PARAMS"]) == {"tokens": "***", "n": 3}
    assert DEFAULT.values("PYTHON", params) == {"first-token-1", "second-token-2"}


def test_input_params_without_a_sensitive_key_keep_their_text_and_one_that_is_not_an_object_is_hidden() -> None:
    text = '{"folder":  "seeds"}'
    assert DEFAULT.shown("PYTHON", {"INPUT_PARAMS": text}) == {"INPUT_PARAMS": text}
    assert DEFAULT.shown("PYTHON", {"INPUT_PARAMS": "{'api_key': broken"}) == {"INPUT_PARAMS": "***"}
    assert DEFAULT.values("PYTHON", {"INPUT_PARAMS": "{'api_key': broken"}) == frozenset()


def test_etl_craft_s_own_handlers_parameters_are_always_shown() -> None:
    sql = {"SQL_ACTION": "SCD1_MERGE", "MERGE_KEY": "order_id", "TARGET_OBJECT": "mart.orders"}
    assert DEFAULT.shown("SQL", sql) == sql  # *KEY* does not hide MERGE_KEY, a column list
    assert DEFAULT.values("SQL", sql) == frozenset()
    assert DEFAULT.values("EMAIL_ALERT", {"EMAIL_TOKEN": "not-a-script-value"}) == frozenset()


def test_short_values_are_hidden_where_shown_but_not_masked_in_logs() -> None:
    params = {"USE_KEY": "true", "API_TOKEN": "abcdef"}
    assert DEFAULT.shown("PYTHON", params) == {"USE_KEY": "***", "API_TOKEN": "***"}
    assert DEFAULT.values("PYTHON", params) == {"abcdef"}
