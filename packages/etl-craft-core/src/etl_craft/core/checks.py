"""A check's verdict: one OK, WARN or FAIL line, as `doctor` prints it and as Engine DB dialects report them."""

from __future__ import annotations

from dataclasses import dataclass

OK, WARN, FAIL = "OK", "WARN", "FAIL"


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str
    detail: str

    @property
    def line(self) -> str:
        return f"[{self.status:<4}] {self.name}: {self.detail}"
