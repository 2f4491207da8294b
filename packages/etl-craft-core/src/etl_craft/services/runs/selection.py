"""Explicit run selection (S3.C): by --run-id or --run-key, else the pipeline's single unfinished run.

Nothing is chosen by recency: with no selector and none or several unfinished runs, the command
refuses and lists the candidates.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from etl_craft.core.errors import ResourceNotFoundError, RunStateError, UsageError
from etl_craft.core.text import BIGINT_MAX, run_key_text
from etl_craft.engine import reads
from etl_craft.engine.reads import PipelineRow, RunRow


@dataclass(frozen=True)
class RunSelector:
    run_id: int | None = None
    run_key: str | None = None

    def __post_init__(self) -> None:
        if self.run_id is not None and self.run_key is not None:
            raise UsageError("--run-id and --run-key", found="both", expected="at most one of them")
        if self.run_id is not None and not 1 <= self.run_id <= BIGINT_MAX:
            raise UsageError("--run-id", found=str(self.run_id), expected=f"a run id from 1 to {BIGINT_MAX}")
        if self.run_key is not None:
            run_key_text(self.run_key, "--run-key")

    @property
    def explicit(self) -> bool:
        return self.run_id is not None or self.run_key is not None

    def describe(self) -> str:
        return f"--run-id {self.run_id}" if self.run_id is not None else f"--run-key {self.run_key}"


def _candidates(runs: list[RunRow]) -> str:
    return "; ".join(
        f"run {r.pipeline_run_id} key={r.run_key} kind={r.trigger_kind} run_date={r.run_date} status={r.status}"
        for r in runs
    )


def selected_run(conn: sa.Connection, pipeline: PipelineRow, selector: RunSelector) -> RunRow | None:
    """The run named by the selector (None for an unused --run-key), else the single unfinished run
    (None when there is none)."""
    if selector.run_id is not None:
        run = reads.run(conn, selector.run_id)
        if run is None:
            raise ResourceNotFoundError(
                f"run {selector.run_id}",
                found="no such run",
                expected="the id of a run",
                remedy="see etl-craft history",
            )
        if run.pipeline_id != pipeline.pipeline_id:
            raise RunStateError(
                f"run {selector.run_id}",
                found=f"a run of another pipeline (id {run.pipeline_id})",
                expected=f"a run of {pipeline.pipeline_code}",
                remedy=f"see etl-craft history --pipeline_code {pipeline.pipeline_code}",
            )
        return run
    if selector.run_key is not None:
        return reads.run_by_key(conn, pipeline.pipeline_id, selector.run_key)
    unfinished = reads.unfinished_runs(conn, pipeline.pipeline_id)
    if len(unfinished) > 1:
        raise RunStateError(
            f"pipeline {pipeline.pipeline_code}",
            found=f"{len(unfinished)} unfinished runs: {_candidates(unfinished)}",
            expected="one, or a run named with --run-id or --run-key",
            remedy="name the run with --run-id",
        )
    return unfinished[0] if unfinished else None


def required_run(conn: sa.Connection, pipeline: PipelineRow, selector: RunSelector) -> RunRow:
    """Like selected_run, for commands that act on an existing run: none is refused with the remedy."""
    run = selected_run(conn, pipeline, selector)
    if run is not None:
        return run
    if selector.explicit:
        raise ResourceNotFoundError(
            f"run {selector.describe()} of {pipeline.pipeline_code}",
            found="no such run",
            expected="an existing run",
            remedy=f"see etl-craft history --pipeline_code {pipeline.pipeline_code} --all",
        )
    raise RunStateError(
        f"pipeline {pipeline.pipeline_code}",
        found="no unfinished run",
        expected="one unfinished run, or a run named with --run-id or --run-key",
        remedy=f"start one with etl-craft run --pipeline_code {pipeline.pipeline_code}, "
        "or name an ended run with --run-id",
    )
