"""Files named by task parameters (SCRIPT_NAME, SOURCE_SQL_FILE): a relative path inside one folder.

Checked before a task does anything, so a typo fails naming the file it probably meant instead of
with a traceback, and a task can never read a file outside its folder, not even through a symlink.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from etl_craft.core.errors import HandlerError
from etl_craft.core.text import close_matches


class TaskFileError(HandlerError):
    """The file a task names is missing or not allowed; a retry would find the same thing."""

    retryable = False


def _candidates(folder: Path, suffix: str) -> list[str]:
    """Every file with the suffix under the folder, as the relative path a task would write."""
    if not folder.is_dir():
        return []
    found = []
    for path in folder.rglob(f"*{suffix}"):
        relative = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            found.append(relative.as_posix())
    return sorted(found)


def _suggestion(value: str, folder: Path, suffix: str) -> str:
    wanted = value if value.endswith(suffix) else str(PurePosixPath(value).with_suffix(suffix))
    matches = close_matches(wanted, _candidates(folder, suffix))
    return f" — did you mean: {', '.join(matches)}" if matches else ""


def resolve_task_file(parameter: str, value: str | None, folder: Path, suffix: str, example: str) -> tuple[Path, str]:
    """The file a task parameter names and its normalised relative path (`./a//b.py` gives `a/b.py`).

    `folder` is the absolute folder the parameter's paths are relative to (e.g. ingestion_scripts/);
    `example` is a valid value shown in messages (e.g. crm/customers.py).
    """
    where = f"the folder {folder}"
    remedy = f"correct {parameter} in the task's CFG_TASK_PARAMETERS"
    if value is None or not value.strip():
        raise TaskFileError(
            f"{parameter}: missing",
            found="no value" if value is None else repr(value),
            expected=f"the path of a {suffix} file inside {where}, e.g. {example}",
            remedy=f"add {parameter} to the task's CFG_TASK_PARAMETERS",
        )
    subject = f"{parameter}={value!r}"
    expected = f"a relative path inside {where}, e.g. {example}"
    if "\\" in value:
        raise TaskFileError(
            subject, found="a backslash", expected=expected, remedy=f"{remedy}, separating folders with /"
        )
    pure = PurePosixPath(value)
    if pure.is_absolute() or value.startswith("~"):
        raise TaskFileError(
            subject,
            found="an absolute path",
            expected=expected,
            remedy=f"{remedy}: write the path relative to {folder}",
        )
    if ".." in pure.parts:
        raise TaskFileError(
            subject, found="a path with '..'", expected=expected, remedy=f"{remedy}: name a file inside {folder}"
        )
    if pure.suffix != suffix:
        raise TaskFileError(
            subject + _suggestion(value, folder, suffix),
            found=f"the suffix {pure.suffix!r}" if pure.suffix else "no suffix",
            expected=f"a {suffix} file inside {where}",
            remedy=remedy,
        )
    relative = pure.as_posix()
    path = folder / relative
    if not path.exists():
        folder_note = "" if folder.is_dir() else f" ({folder} does not exist)"
        raise TaskFileError(
            f"{subject}: no such file {path}{folder_note}{_suggestion(value, folder, suffix)}",
            expected=f"an existing {suffix} file inside {where}",
            remedy=f"{remedy}, or add the file",
        )
    if not path.is_file():
        raise TaskFileError(
            subject, found=f"{path}, which is not a file", expected=f"a {suffix} file inside {where}", remedy=remedy
        )
    if not path.resolve().is_relative_to(folder.resolve()):
        raise TaskFileError(
            subject,
            found=f"a link to {path.resolve()}, outside {folder}",
            expected=f"a file inside {where}",
            remedy=f"copy the file into {folder} instead of linking to it",
        )
    return path, relative
