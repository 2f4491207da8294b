"""Sections in their fixed order, known keys, and profile selection."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit

ENGINE = "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n"
MINIMAL = "Orchestration:\n  Mode: local\n" + ENGINE


def test_minimal_file_without_secrets_reads_the_environment_only(project):
    config = project.load("Orchestration:\n  Mode: local\n" + ENGINE)
    assert config.secrets_settings.source_type == "environment"
    assert config.secrets_settings.path is None
    assert config.secrets_settings.profile is None
    assert config.warehouse is None
    assert config.docs_site is None
    assert config.cloning.enabled is False


def test_empty_secrets_and_orchestration_sections_take_defaults(project):
    config = project.load("Secrets:\nOrchestration:\n" + ENGINE)
    assert config.secrets_settings.source_type == "environment"
    assert config.orchestration.mode == "local"
    assert config.orchestration.max_parallel_tasks == 8
    assert config.orchestration.log_dir == project.root / "logs"


def test_empty_file_is_refused(project):
    message = project.refuse("")
    assert "craft-connector.yml: (top level): found an empty file" in message
    assert "Secrets, Orchestration, Engine, Warehouse, Cloning, Docs_site" in message


def test_unknown_section_names_the_expected_sections(project):
    message = project.refuse("Orchestration:\n  Mode: local\n" + ENGINE + "Warehous:\n  jdbc_url: x\n")
    assert "craft-connector.yml: Warehous (line 5): unknown section" in message
    assert "Secrets, Orchestration, Engine, Warehouse, Cloning, Docs_site" in message
    assert "did you mean Warehouse?" in message


def test_sections_out_of_order_are_refused_naming_the_order(project):
    message = project.refuse(ENGINE + "Orchestration:\n  Mode: local\n")
    assert "sections out of order: found Engine, Orchestration" in message
    assert "expected this order: Secrets, Orchestration, Engine, Warehouse, Cloning, Docs_site" in message


def test_a_missing_required_section_is_named(project):
    message = project.refuse("Orchestration:\n  Mode: local\n")
    assert "section Engine is missing" in message
    assert message.endswith("Add the Engine section")


def test_a_section_that_is_not_a_mapping_is_refused(project):
    message = project.refuse("Orchestration: local\n" + ENGINE)
    assert "craft-connector.yml: Orchestration (line 1): found a str; expected a mapping of keys" in message


def test_unknown_key_names_key_path_line_expected_keys_and_a_hint(project):
    message = project.refuse("Orchestration:\n  mode: local\n" + ENGINE)
    assert "craft-connector.yml: Orchestration.mode (line 2): unknown key" in message
    assert "Task_timeout_seconds" in message and "Max_parallel_tasks" in message
    assert "did you mean Mode?" in message


def test_unknown_key_in_a_profile_that_is_not_selected_is_still_refused(project):
    message = project.refuse(
        """\
        Secrets:
          Profile: dev
        Orchestration:
          Mode: local
        Engine:
          dev:
            jdbc_url: jdbc:sqlite:engine.db
          prod:
            jdbc_ur: jdbc:postgresql://db/etl
        """
    )
    assert "craft-connector.yml: Engine.prod.jdbc_ur (line 9): unknown key" in message
    assert "did you mean jdbc_url?" in message


def test_email_keys_in_a_profile_that_is_not_selected_are_refused(project):
    message = project.refuse(
        "Secrets:\n  Profile: dev\nOrchestration:\n  dev: {}\n  prod:\n    Email:\n"
        "      host: relay\n      use_tls: true\n" + ENGINE
    )
    assert "craft-connector.yml: Orchestration.prod.Email.use_tls (line 8): unknown key" in message
    assert "tls_mode" in message


def test_a_misspelt_mapping_key_is_explained_as_a_profile_block(project):
    message = project.refuse(
        "Orchestration:\n  Emial:\n    host: smtp.example.com\n" + ENGINE,
    )
    assert "Orchestration.Emial.host (line 3): unknown key" in message
    assert "Orchestration.Emial is read as a profile block" in message


def test_profile_inside_a_profile_block_is_refused(project):
    message = project.refuse(
        "Secrets:\n  Profile: dev\nOrchestration:\n  dev:\n    Profile: prod\n" + ENGINE,
    )
    assert "Orchestration.dev.Profile (line 5): Profile is read only at section level" in message


def test_profile_blocks_without_a_selected_profile_are_refused_listing_them(project):
    message = project.refuse(
        "Orchestration:\n  Mode: local\nEngine:\n  dev:\n    jdbc_url: jdbc:sqlite:a.db\n"
        "  prod:\n    jdbc_url: jdbc:sqlite:b.db\n"
    )
    assert "craft-connector.yml: Engine (line 3): has profile blocks (dev, prod) but no profile is selected" in message
    assert "Secrets.Profile" in message


def test_a_selected_profile_that_does_not_exist_is_refused_listing_the_available(project):
    message = project.refuse(
        "Secrets:\n  Profile: prd\nOrchestration:\n  Mode: local\n"
        "Engine:\n  dev:\n    jdbc_url: jdbc:sqlite:a.db\n  prod:\n    jdbc_url: jdbc:sqlite:b.db\n"
    )
    assert (
        "craft-connector.yml: Secrets.Profile (line 2): selects profile 'prd', which Engine does not define" in message
    )
    assert "expected one of dev, prod" in message
    assert "did you mean prod?" in message
    assert "Select an existing profile or add the Engine.prd block" in message


def test_profile_named_by_an_unset_variable_says_the_text_was_used(project):
    message = project.refuse(
        "Secrets:\n  Profile: ETL_CRAFT_PROFILE\nOrchestration:\n  Mode: local\n"
        "Engine:\n  dev:\n    jdbc_url: jdbc:sqlite:a.db\n"
    )
    assert "selects profile 'ETL_CRAFT_PROFILE'" in message
    assert "no variable ETL_CRAFT_PROFILE is set, so the text itself was used" in message


PROFILED = """\
Secrets:
  Profile: ETL_CRAFT_PROFILE
Orchestration:
  Mode: local
  Max_parallel_tasks: 4
  Email:
    host: smtp.example.com
    from_address: etl@example.com
  dev: {}
  sit:
    Mode: remote
    Email:
      transport: sendmail
      from_address: sit@example.com
Engine:
  schema: etl_craft
  dev:
    jdbc_url: jdbc:sqlite:dev.db
    schema: main
  sit:
    jdbc_url: jdbc:postgresql://db.example.com:5432/etl
"""


def test_profile_selected_through_a_variable_and_section_keys_shared(project):
    config = project.load(PROFILED, {"ETL_CRAFT_PROFILE": "dev"})
    assert config.secrets_settings.profile == "dev"
    assert config.orchestration.profile == "dev"
    assert config.orchestration.mode == "local"
    assert config.orchestration.max_parallel_tasks == 4
    assert config.orchestration.email is not None
    assert config.orchestration.email.host == "smtp.example.com"
    assert config.engine.profile == "dev"
    assert config.engine.schema == "main"


def test_a_key_in_the_active_profile_overrides_the_section_level_key(project):
    config = project.load(PROFILED, {"ETL_CRAFT_PROFILE": "sit"})
    assert config.orchestration.mode == "remote"
    assert config.orchestration.max_parallel_tasks == 4  # shared from section level
    assert config.orchestration.email is not None
    assert config.orchestration.email.transport == "sendmail"  # the whole Email block is replaced
    assert config.orchestration.email.host is None
    assert config.engine.schema == "etl_craft"  # shared from section level
    assert config.engine.jdbc_url == "jdbc:postgresql://db.example.com:5432/etl"


def test_a_sections_own_profile_wins_over_secrets_profile(project):
    config = project.load(
        "Secrets:\n  Profile: dev\nOrchestration:\n  Mode: local\n"
        "Engine:\n  Profile: prod\n  dev:\n    jdbc_url: jdbc:sqlite:a.db\n"
        "  prod:\n    jdbc_url: jdbc:sqlite:b.db\n"
    )
    assert config.engine.profile == "prod"
    assert config.engine.jdbc_url.endswith("/b.db")


def test_a_sections_profile_without_profile_blocks_is_refused(project):
    message = project.refuse("Orchestration:\n  Profile: dev\n  Mode: local\n" + ENGINE)
    assert "Orchestration.Profile (line 2): selects profile 'dev' but Orchestration has no profile blocks" in message


def test_only_the_active_profile_is_checked_for_secrets(project):
    config = project.load(
        "Secrets:\n  Profile: dev\nOrchestration:\n  Mode: local\n"
        "Engine:\n  dev:\n    jdbc_url: jdbc:sqlite:a.db\n"
        "  prod:\n    jdbc_url: jdbc:postgresql://db/etl\n    schema: etl\n"
        "    user: etl\n    secret: ENGINE_SECRET\n"
    )
    assert config.engine.profile == "dev"


def test_secrets_path_is_refused_with_the_environment_source(project):
    message = project.refuse("Secrets:\n  Source_type: environment\n  Path: .env\nOrchestration: {}\n" + ENGINE)
    assert "Secrets.Path (line 3): is read only with Source_type: file" in message


def test_file_source_requires_a_path(project):
    message = project.refuse("Secrets:\n  Source_type: file\nOrchestration: {}\n" + ENGINE)
    assert "Secrets.Path: missing" in message


def test_file_source_reads_the_env_file_beside_the_config(project):
    (project.root / "secrets").mkdir()
    (project.root / "secrets" / "prod.env").write_text("ETL_CRAFT_PROFILE=prod\n", encoding="utf-8")
    config = project.load(
        "Secrets:\n  Source_type: FILE\n  Path: secrets/prod.env\n  Profile: ETL_CRAFT_PROFILE\n"
        "Orchestration: {}\nEngine:\n  prod:\n    jdbc_url: jdbc:sqlite:p.db\n"
    )
    assert config.secrets_settings.source_type == "file"
    assert config.secrets_settings.path == project.root / "secrets" / "prod.env"
    assert config.engine.profile == "prod"


def test_an_unknown_secrets_source_type_names_the_choices(project):
    message = project.refuse("Secrets:\n  Source_type: vault\nOrchestration: {}\n" + ENGINE)
    assert "Secrets.Source_type (line 2): found 'vault'; expected one of environment, file" in message


# --- Redaction ---------------------------------------------------------------------------------------


def test_redaction_defaults_and_written_patterns_replace_them(project):
    assert project.load(MINIMAL).redaction.patterns == ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*KEY*")
    assert project.load(MINIMAL + "Redaction:\n").redaction.patterns == ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*KEY*")
    written = project.load(MINIMAL + "Redaction:\n  Sensitive_patterns: ['*TOKEN*', '*_PIN', '*TOKEN*']\n")
    assert written.redaction.patterns == ("*TOKEN*", "*_PIN")
    assert written.redaction.matches("card_pin") and not written.redaction.matches("API_KEY")
    listed = project.load(MINIMAL + "Redaction:\n  Sensitive_patterns: '*CERT*, *SIGN*'\n")
    assert listed.redaction.patterns == ("*CERT*", "*SIGN*")
    assert project.load(MINIMAL + "Redaction:\n  Sensitive_patterns: []\n").redaction.patterns == ()


def test_redaction_refuses_other_keys_odd_patterns_and_a_place_out_of_order(project):
    message = project.refuse(MINIMAL + "Redaction:\n  Patterns: ['*TOKEN*']\n")
    assert "Redaction.Patterns (line 6): unknown key" in message and "did you mean Sensitive_patterns" in message
    message = project.refuse(MINIMAL + "Redaction:\n  Sensitive_patterns: ['API TOKEN']\n")
    assert "Redaction.Sensitive_patterns (line 6): found 'API TOKEN'" in message
    assert "expected shell-style patterns" in message
    message = project.refuse("Redaction:\n  Sensitive_patterns: ['*PIN*']\n" + MINIMAL)
    assert (
        "expected this order: Secrets, Orchestration, Engine, Warehouse, Cloning, Docs_site, Logs, Retention, Redaction"
        in message
    )
