"""What a supervisor is asked to do (its scope: the whole run, or some tasks under it) and how it
stopped (its ending, with the run's status and each task's state)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from etl_craft.execution.readiness import TaskState


class Ending(StrEnum):
    FINISHED = "finished"  # the run ended (see run_status)
    SETTLED = "settled"  # the scoped tasks are done; the run goes on
    PAUSED = "paused"  # the pipeline is paused: no new task starts, the run stays IN-PROGRESS
    WAITING = "waiting"  # a scoped task's dependencies are not met yet; nothing was recorded
    STOPPED = "stopped"  # a signal stopped the supervisor; its tasks were stopped and recorded FAILED
    CANCELLED = "cancelled"  # an operator cancelled the run
    TAKEN = "taken"  # the run was ended or taken by someone else


@dataclass(frozen=True)
class Scope:
    tasks: frozenset[int] | None = None  # None: every task of the pipeline
    own_run: bool = True  # hold the run's lease (the whole-pipeline supervisor)
    finalize: bool = True  # end the run once every task is settled
    check_dependencies: bool = True
    again: frozenset[int] = frozenset()  # tasks to run again whatever their status (rerun, force)
    resume_failed: bool = True  # FAILED tasks found at the start get a new attempt
    force: bool = False
    rerun: bool = False
    bypass_reason: str | None = None  # why dependencies on other pipelines are not judged (recorded BYPASSED)

    def includes(self, task_id: int) -> bool:
        return self.tasks is None or task_id in self.tasks


@dataclass(frozen=True)
class Supervised:
    ending: Ending
    run_status: str
    message: str
    states: dict[int, TaskState] = field(default_factory=dict)
