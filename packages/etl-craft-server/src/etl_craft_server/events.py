"""What the Engine DB's notifications say: the ids of what changed since the overseer last looked.

Transitions announce the id of what changed (`run:<id>`, `pipeline:<id>`, and `ended:<run id>:<attempt
id>` for an attempt's end) when their transaction commits, so the overseer reacts to a CLI cancel or a
task run at once instead of at its next sweep. Where the Engine DB cannot notify, its dialect gives no
listener and the overseer sweeps more often (the dialect's sweep_seconds).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Events:
    runs: frozenset[int] = field(default_factory=frozenset)
    pipelines: frozenset[int] = field(default_factory=frozenset)
    ended: frozenset[tuple[int, int]] = field(default_factory=frozenset)  # (run id, attempt id)

    @staticmethod
    def parse(payloads: list[str]) -> Events:
        runs, pipelines, ended = set(), set(), set()
        for payload in payloads:
            kind, _, rest = payload.partition(":")
            ids = rest.split(":")
            if not all(i.isdigit() for i in ids):
                continue
            if kind == "run" and len(ids) == 1:
                runs.add(int(ids[0]))
            elif kind == "pipeline" and len(ids) == 1:
                pipelines.add(int(ids[0]))
            elif kind == "ended" and len(ids) == 2:
                ended.add((int(ids[0]), int(ids[1])))
        return Events(frozenset(runs), frozenset(pipelines), frozenset(ended))

    def wake(self, run_id: int, pipeline_id: int, own_processes: Container[int]) -> bool:
        """Whether a supervised run has news: a change to it or its pipeline, or the end of an attempt
        that none of the overseer's own task processes (`own_processes`, by attempt id) ran. The end
        of one of those wakes the run when the process exits, just after it recorded the end: one
        step for it, not two."""
        if run_id in self.runs or pipeline_id in self.pipelines:
            return True
        return any(run == run_id and attempt not in own_processes for run, attempt in self.ended)
