"""Task runs and attempts by id, and an attempt's log read from byte offsets: the API answers the
documents `etl-craft task-run`, `etl-craft attempt` and `etl-craft attempt-log` print."""

from __future__ import annotations

from tests.server.api.conftest import LOG_LINES

P = "/api/v1/projects/default"


def _finished_run(api) -> tuple[int, int, int]:
    """A run of sales that ran to its end: its id, extract's task run id and its attempt id."""
    run_id = api.post(f"{P}/pipelines/sales/runs", {}, kind="ci-bot").json()["run"]["pipeline_run_id"]
    assert api.cli("run", "--pipeline_code", "sales", "--run-id", str(run_id))["status"] == "SUCCESS"
    status = api.get(f"{P}/pipelines/sales/runs/{run_id}").json()
    [extract] = [t for t in status["tasks"] if t["task_code"] == "extract"]
    [attempt] = extract["attempts"]
    return run_id, extract["task_run_id"], attempt["attempt_id"]


def test_task_run_and_attempt_documents_are_the_cli_documents(fresh_api) -> None:
    api = fresh_api
    run_id, task_run_id, attempt_id = _finished_run(api)
    task_run = api.get(f"{P}/task-runs/{task_run_id}")
    assert task_run.status_code == 200, task_run.text
    doc = task_run.json()
    assert doc == api.cli("task-run", "--task-run-id", str(task_run_id))
    assert (doc["schema"], doc["pipeline_code"], doc["run"]["pipeline_run_id"]) == (
        "etl-craft/task-run/1",
        "sales",
        run_id,
    )
    assert (doc["task"]["task_code"], doc["task"]["status"], doc["task"]["attempt_count"]) == ("extract", "SUCCESS", 1)
    assert [a["attempt_id"] for a in doc["task"]["attempts"]] == [attempt_id]
    attempt = api.get(f"{P}/attempts/{attempt_id}")
    assert attempt.status_code == 200, attempt.text
    assert attempt.json() == api.cli("attempt", "--attempt-id", str(attempt_id))
    assert (attempt.json()["task_code"], attempt.json()["pipeline_run_id"], attempt.json()["attempt"]["status"]) == (
        "extract",
        run_id,
        "SUCCESS",
    )


def test_the_log_is_read_from_offsets_and_never_cut_inside_a_character(fresh_api) -> None:
    api = fresh_api
    _run_id, _task_run_id, attempt_id = _finished_run(api)
    whole = api.get(f"{P}/attempts/{attempt_id}/log")
    assert whole.status_code == 200, whole.text
    doc = whole.json()
    assert doc == api.cli("attempt-log", "--attempt-id", str(attempt_id))
    assert doc["schema"] == "etl-craft/attempt-log/1"
    assert "\n".join(LOG_LINES) in doc["text"]
    assert (doc["offset"], doc["next_offset"], doc["attempt_ended"]) == (0, doc["size"], True)
    raw = doc["text"].encode("utf-8")
    assert len(raw) == doc["size"]
    cut = raw.index("é".encode()) + 1  # one byte into the two bytes of é
    first = api.get(f"{P}/attempts/{attempt_id}/log", limit=cut).json()
    assert (first["text"], first["next_offset"]) == (raw[: cut - 1].decode(), cut - 1)
    rest = api.get(f"{P}/attempts/{attempt_id}/log", offset=first["next_offset"]).json()
    assert first["text"] + rest["text"] == doc["text"]
    assert rest["next_offset"] == doc["size"]
    past = api.get(f"{P}/attempts/{attempt_id}/log", offset=doc["size"] + 1)
    assert past.status_code == 400, past.text
    assert f"offset {doc['size'] + 1}" in past.json()["message"]
    assert f"the log's size, {doc['size']} bytes" in past.json()["message"]


def test_unknown_ids_are_404_naming_the_id(api) -> None:
    for path, named in (
        (f"{P}/task-runs/987654", "task run 987654"),
        (f"{P}/attempts/987654", "attempt 987654"),
        (f"{P}/attempts/987654/log", "attempt 987654"),
    ):
        response = api.get(path)
        assert response.status_code == 404, response.text
        assert response.json()["exit_name"] == "RESOURCE_NOT_FOUND"
        assert response.json()["message"].startswith(named)
