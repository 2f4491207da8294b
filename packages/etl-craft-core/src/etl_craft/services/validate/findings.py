"""What validate found: FAIL and WARN findings, each naming the pipeline, the task and the problem."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from etl_craft.core.errors import EtlCraftError, describe

FAIL, WARN = "FAIL", "WARN"


@dataclass(frozen=True)
class Finding:
    level: str  # FAIL | WARN
    pipeline_code: str | None
    task_code: str | None
    message: str

    @property
    def where(self) -> str:
        if self.pipeline_code is None:
            return ""
        return self.pipeline_code if self.task_code is None else f"{self.pipeline_code}.{self.task_code}"

    @property
    def line(self) -> str:
        return f"[{self.level}] {self.where}: {self.message}" if self.where else f"[{self.level}] {self.message}"


@dataclass(frozen=True)
class ValidationReport:
    pipelines_checked: int
    tasks_checked: int
    findings: tuple[Finding, ...]
    failed: int = field(init=False)
    warnings: int = field(init=False)
    valid: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "failed", sum(f.level == FAIL for f in self.findings))
        object.__setattr__(self, "warnings", sum(f.level == WARN for f in self.findings))
        object.__setattr__(self, "valid", self.failed == 0)

    @property
    def summary(self) -> str:
        return (
            f"checked {self.pipelines_checked} pipeline(s) and {self.tasks_checked} task(s): "
            f"{self.failed} failed, {self.warnings} warning(s)"
        )

    @property
    def lines(self) -> list[str]:
        return [f.line for f in self.findings] + [self.summary]


def _short_subject(subject: str, pipeline: str | None, task: str | None) -> str:
    """The error's subject without the task or pipeline the finding already names."""
    prefixes = []
    if task is not None:
        prefixes += [f"task {pipeline}.{task}", f"task {task}"]
    if pipeline is not None:
        prefixes.append(f"pipeline {pipeline}")
    for prefix in prefixes:
        if subject == prefix:
            return ""
        if subject.startswith(prefix + ": "):
            return subject[len(prefix) + 2 :]
    return subject


class Findings:
    """The findings of one validation, in the order they were made."""

    def __init__(self) -> None:
        self.items: list[Finding] = []

    def add(
        self,
        level: str,
        pipeline: str | None,
        task: str | None,
        subject: str,
        *,
        found: str | None = None,
        expected: str | None = None,
        remedy: str | None = None,
    ) -> None:
        if subject:
            message = describe(subject, found=found, expected=expected, remedy=remedy)
        else:
            # No subject beyond the task itself: start with what was found.
            message = re.sub(r"^: ", "", describe("", found=found, expected=expected, remedy=remedy))
        self.items.append(Finding(level, pipeline, task, message))

    def fail(self, pipeline: str | None, task: str | None, subject: str, **parts: str | None) -> None:
        self.add(FAIL, pipeline, task, subject, **parts)

    def warn(self, pipeline: str | None, task: str | None, subject: str, **parts: str | None) -> None:
        self.add(WARN, pipeline, task, subject, **parts)

    def error(self, error: EtlCraftError, pipeline: str | None, task: str | None, level: str = FAIL) -> None:
        """A check's own error as a finding, with the subject shortened to what the finding doesn't say."""
        self.add(
            level,
            pipeline,
            task,
            _short_subject(error.subject, pipeline, task),
            found=error.found,
            expected=error.expected,
            remedy=error.remedy,
        )

    def sorted(self) -> tuple[Finding, ...]:
        """Project-wide findings first, then by pipeline and task, keeping each one's own order."""
        return tuple(sorted(self.items, key=lambda f: (f.pipeline_code or "", f.task_code or "")))
