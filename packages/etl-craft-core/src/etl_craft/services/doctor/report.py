"""What doctor reports: one OK, WARN or FAIL line per check, and the counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from etl_craft.core.checks import FAIL, OK, WARN, CheckResult


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[CheckResult, ...]
    ok: int = field(init=False)
    warnings: int = field(init=False)
    failed: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ok", sum(c.status == OK for c in self.checks))
        object.__setattr__(self, "warnings", sum(c.status == WARN for c in self.checks))
        object.__setattr__(self, "failed", sum(c.status == FAIL for c in self.checks))

    @property
    def summary(self) -> str:
        return f"{self.ok} ok, {self.warnings} warning(s), {self.failed} failed"

    @property
    def lines(self) -> list[str]:
        return [c.line for c in self.checks] + [self.summary]
