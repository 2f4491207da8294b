"""Typed settings: whole numbers, booleans, choices, time zones, addresses, lists, variables."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit

ENGINE = "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n"


def orchestration(lines: str) -> str:
    return "Orchestration:\n" + "".join(f"  {line}\n" for line in lines.splitlines()) + ENGINE


def test_max_parallel_tasks_zero_is_refused(project):
    message = project.refuse(orchestration("Max_parallel_tasks: 0"))
    assert "craft-connector.yml: Orchestration.Max_parallel_tasks (line 2): found '0'" in message
    assert "expected a whole number from 1 to 1024" in message


def test_superscript_digit_is_refused_though_python_calls_it_a_digit(project):
    message = project.refuse(orchestration('Retries: "²"'))
    assert "Orchestration.Retries (line 2): found '²'" in message
    assert "written with the digits 0-9" in message


def test_an_smtp_port_out_of_range_is_refused(project):
    message = project.refuse(
        orchestration("Email:\n  host: smtp.example.com\n  port: 587587\n  from_address: a@example.com")
    )
    assert "Orchestration.Email.port (line 4): found '587587'" in message
    assert "from 1 to 65535" in message


def test_an_smtp_port_of_zero_is_refused(project):
    message = project.refuse(orchestration("Email:\n  host: smtp.example.com\n  port: 0\n  from_address: a@b.c"))
    assert "Orchestration.Email.port (line 4): found '0'" in message


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("Task_timeout_seconds: -1", "'-1'"),
        ("Gate_wait_minutes: 1.5", "'1.5'"),
        ("Shutdown_grace_seconds: 0x10", "'0x10'"),
        ("Retry_delay_minutes: 1_000", "'1_000'"),
        ("Retries: true", "the boolean true"),
        ("Retries: ten", "'ten'"),
    ],
)
def test_whole_numbers_must_be_plain_decimal_digits(project, line, found):
    message = project.refuse(orchestration(line))
    assert f"found {found}" in message


def test_whole_numbers_accept_zero_where_allowed_quoted_digits_and_variables(project):
    config = project.load(
        orchestration(
            'Task_timeout_seconds: 0\nGate_wait_minutes: "0"\nRetries: ETL_RETRIES\n'
            "Shutdown_grace_seconds: 0030\nMax_parallel_tasks: 1"
        ),
        {"ETL_RETRIES": "3"},
    )
    assert config.orchestration.task_timeout_seconds == 0
    assert config.orchestration.gate_wait_minutes == 0
    assert config.orchestration.retries == 3
    assert config.orchestration.shutdown_grace_seconds == 30
    assert config.orchestration.max_parallel_tasks == 1


def test_a_number_from_a_variable_names_the_variable_when_refused(project):
    message = project.refuse(orchestration("Max_parallel_tasks: ETL_PARALLEL"), {"ETL_PARALLEL": "many"})
    assert "found 'many' (from variable ETL_PARALLEL)" in message


def test_booleans_are_yaml_booleans_or_the_words_true_and_false(project):
    config = project.load(
        orchestration('Enforce_sla: yes\nGlobal_dag: "true"\nCatchup: FALSE\nAllow_schedule: false'),
    )
    assert config.orchestration.enforce_sla is True
    assert config.orchestration.global_dag is True
    assert config.orchestration.catchup is False
    assert config.orchestration.allow_schedule is False


@pytest.mark.parametrize("written", ['"1"', '"yes"', "2", '"enabled"'])
def test_other_boolean_spellings_are_refused(project, written):
    message = project.refuse(orchestration(f"Enforce_sla: {written}"))
    assert "Orchestration.Enforce_sla (line 2)" in message
    assert "expected true or false" in message


def test_choices_are_normalised_and_unquoted_off_is_not_a_boolean(project):
    config = project.load(orchestration("Mode: LOCAL\nDependency_gates: off"))
    assert config.orchestration.mode == "local"
    assert config.orchestration.dependency_gates == "off"


def test_an_unknown_choice_names_the_allowed_values(project):
    message = project.refuse(orchestration("Dependency_gates: enforced"))
    assert "Orchestration.Dependency_gates (line 2): found 'enforced'; expected one of enforce, warn, off" in message
    assert "did you mean enforce?" in message


def test_remote_mode_refuses_relaxed_gates(project):
    message = project.refuse(orchestration("Mode: remote\nDependency_gates: warn"))
    assert "Orchestration.Dependency_gates (line 3): only enforce is possible in remote mode" in message


def test_timezone_must_be_an_iana_name(project):
    message = project.refuse(orchestration("Timezone: Europe/Pari"))
    assert "Orchestration.Timezone (line 2): found 'Europe/Pari'" in message
    assert "Europe/Paris" in message
    config = project.load(orchestration("Timezone: America/New_York"))
    assert config.orchestration.timezone == "America/New_York"


@pytest.mark.parametrize(
    "address", ["0.0.0.0:9000", "localhost:8730", '"[::1]:8730"', "'[2001:db8::1]:443'", "127.0.0.1:0"]
)
def test_api_address_forms(project, address):
    config = project.load(orchestration(f"Api_address: {address}"))
    assert config.orchestration.api_address == address.strip("'\"")


@pytest.mark.parametrize("address", ["localhost", "localhost:-1", "localhost:70000", "[nothost]:80", "::1:80", ":80"])
def test_api_address_refusals(project, address):
    message = project.refuse(orchestration(f'Api_address: "{address}"'))
    assert "Orchestration.Api_address (line 2)" in message
    assert "expected host:port or [ipv6]:port" in message


def test_lists_accept_yaml_lists_and_comma_separated_text(project):
    config = project.load(
        orchestration("Tags: [etl, nightly]\nEmail_recipients: ops@example.com, data@example.com"),
    )
    assert config.orchestration.tags == ("etl", "nightly")
    assert config.orchestration.email_recipients == ("ops@example.com", "data@example.com")


def test_a_recipient_that_is_not_an_address_is_refused(project):
    message = project.refuse(orchestration("Email_recipients: [ops@example.com, nobody]"))
    assert "Orchestration.Email_recipients (line 2): found 'nobody'" in message


def test_a_list_where_one_value_belongs_is_refused(project):
    message = project.refuse(orchestration("Mode: [local, remote]"))
    assert "Orchestration.Mode (line 2): found a list; expected a single value" in message


def test_a_setting_naming_an_empty_variable_is_refused(project):
    message = project.refuse(orchestration("Name: ORCHESTRATOR_NAME"), {"ORCHESTRATOR_NAME": ""})
    assert "Orchestration.Name (line 2): names variable ORCHESTRATOR_NAME, which is empty" in message


def test_literal_values_that_look_like_variables_are_recorded_for_doctor(project):
    config = project.load(orchestration("Name: AIRFLOW_PROD\nMode: local"))
    assert config.orchestration.name == "AIRFLOW_PROD"
    assert config.literal_variables == (("Orchestration.Name", "AIRFLOW_PROD"),)


def test_paths_resolve_beside_the_config_and_stay_absolute(project):
    config = project.load(orchestration("Log_dir: ../shared/logs"))
    assert config.orchestration.log_dir == project.root / ".." / "shared" / "logs"
    assert config.orchestration.log_dir.is_absolute()


def test_an_empty_quoted_text_is_refused(project):
    message = project.refuse(orchestration('Name: ""'))
    assert "Orchestration.Name (line 2): found an empty text" in message
