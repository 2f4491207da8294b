"""`docs-version`: a new AUD_TASK_DOCUMENTATION version for each task whose DOCUMENTATION changed."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from etl_craft.engine.records.documentation import documented_tasks, record_versions
from etl_craft.services.context import OperationContext


@dataclass(frozen=True)
class DocumentationVersion:
    pipeline_code: str
    task_code: str
    version: int
    changed: bool


@dataclass(frozen=True)
class DocumentationVersions:
    tasks: tuple[DocumentationVersion, ...]
    recorded: bool  # False with --check: what would change, nothing written


def documentation_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def docs_version(ctx: OperationContext, *, check: bool) -> DocumentationVersions:
    with ctx.db.write() as conn:
        found = documented_tasks(conn)
        shown, new = [], []
        for task in found:
            digest = documentation_hash(task.text)
            changed = digest != task.latest_hash
            version = (task.latest_version or 0) + 1 if changed else (task.latest_version or 0)
            shown.append(DocumentationVersion(task.pipeline_code, task.task_code, version, changed))
            if changed:
                new.append({"task_id": task.task_id, "version": version, "documentation_hash": digest,
                            "documentation": task.text})  # fmt: skip
        if not check:
            record_versions(conn, new)
    return DocumentationVersions(tuple(shown), not check)
