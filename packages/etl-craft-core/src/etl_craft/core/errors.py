"""Every deliberate error of etl-craft and the single table of exit statuses.

An error names the object, the value found, what was expected and the remedy. Each class maps to
one ExitCode; `retryable` tells the task process whether a new attempt could succeed.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    """Exit statuses of the `etl-craft` command (docs/reference/exit-codes.md)."""

    SUCCESS = 0
    FAILURE = 1
    USAGE = 2
    CONFIGURATION = 3
    METADATA = 4
    GRAPH = 5
    SELF_DEPENDENCY = 6
    DEPENDENCY_CYCLE = 7
    UNKNOWN_TASK = 8
    RUN_STATE = 9
    RUN_REFUSED = 10
    CONNECTION_TEST = 11
    ENGINE_DB = 12
    MIGRATION = 13
    LOCK_TIMEOUT = 14
    HANDLER = 15
    UNEXPECTED = 16
    CLONING = 17
    REMOTE_UNSUPPORTED = 18
    INJECTED_FAULT = 19
    STALE_TRANSITION = 20
    SQL_GUARD = 21
    INCOMPLETE = 22
    WAITING = 23
    RESOURCE_NOT_FOUND = 24
    CONFIG_FILES = 25
    ACCESS_DENIED = 26


def describe(
    subject: str,
    *,
    found: str | None = None,
    expected: str | None = None,
    remedy: str | None = None,
) -> str:
    """Compose the standard message: subject, what was found, what was expected, then the remedy."""
    parts = [subject]
    if found is not None:
        parts.append(f"found {found}")
    if expected is not None:
        parts.append(f"expected {expected}")
    text = ": ".join(parts[:2]) + ("" if len(parts) < 3 else f"; {parts[2]}")
    if remedy:
        text += f". {remedy[0].upper()}{remedy[1:]}"
    return text


class EtlCraftError(Exception):
    """Base class of deliberate errors; `exit_code` is what the CLI exits with."""

    exit_code: ClassVar[ExitCode] = ExitCode.UNEXPECTED
    retryable: ClassVar[bool] = True

    def __init__(
        self,
        subject: str,
        *,
        found: str | None = None,
        expected: str | None = None,
        remedy: str | None = None,
    ) -> None:
        self.subject = subject
        self.found = found
        self.expected = expected
        self.remedy = remedy
        super().__init__(describe(subject, found=found, expected=expected, remedy=remedy))

    @property
    def message(self) -> str:
        return str(self)

    def to_json(self) -> dict[str, object]:
        return {
            "error": type(self).__name__,
            "message": self.message,
            "exit_code": int(self.exit_code),
            "exit_name": self.exit_code.name,
        }


class UsageError(EtlCraftError):
    exit_code = ExitCode.USAGE
    retryable = False


class NameTakenError(UsageError):
    """A new token, user or pipeline named as a live one is: a usage error to the CLI, a conflict (409) to the API."""


class ConfigurationError(EtlCraftError):
    exit_code = ExitCode.CONFIGURATION
    retryable = False


class MissingEngineDbError(ConfigurationError):
    """The configured Engine DB does not exist (yet): only init-db, setup and demo create one."""


class MetadataError(EtlCraftError):
    exit_code = ExitCode.METADATA
    retryable = False


class UnknownCodeError(MetadataError):
    """A pipeline or task code that names no active row: exit 4 like any metadata error; the HTTP API
    answers 404 (the code is the resource it was asked for)."""


class GraphError(EtlCraftError):
    exit_code = ExitCode.GRAPH
    retryable = False


class SelfDependencyError(GraphError):
    exit_code = ExitCode.SELF_DEPENDENCY


class CycleError(GraphError):
    exit_code = ExitCode.DEPENDENCY_CYCLE


class UnknownTaskError(GraphError):
    exit_code = ExitCode.UNKNOWN_TASK


class RunStateError(EtlCraftError):
    exit_code = ExitCode.RUN_STATE
    retryable = False


class RunRefusedError(EtlCraftError):
    exit_code = ExitCode.RUN_REFUSED
    retryable = False


class ConnectionTestError(EtlCraftError):
    exit_code = ExitCode.CONNECTION_TEST


class EngineDbError(EtlCraftError):
    exit_code = ExitCode.ENGINE_DB


class MigrationError(EtlCraftError):
    exit_code = ExitCode.MIGRATION
    retryable = False


class LockTimeoutError(EtlCraftError):
    exit_code = ExitCode.LOCK_TIMEOUT


class HandlerError(EtlCraftError):
    exit_code = ExitCode.HANDLER


class CloningError(EtlCraftError):
    exit_code = ExitCode.CLONING


class RemoteUnsupportedError(EtlCraftError):
    exit_code = ExitCode.REMOTE_UNSUPPORTED
    retryable = False


class InjectedFault(EtlCraftError):
    """Raised by a fault point named in ETL_CRAFT_FAULT (tests only)."""

    exit_code = ExitCode.INJECTED_FAULT


class StaleTransitionError(EtlCraftError):
    """A guarded status change found the row in another status or owned by someone else."""

    exit_code = ExitCode.STALE_TRANSITION
    retryable = False


class TaskParameterError(HandlerError):
    """A task parameter the engine reads has a value it can't use; a retry would fail the same way."""

    retryable = False


class SqlGuardError(HandlerError):
    """A SQL task's input or target state is refused before the target is touched."""

    exit_code = ExitCode.SQL_GUARD
    retryable = False


class ResourceNotFoundError(EtlCraftError):
    exit_code = ExitCode.RESOURCE_NOT_FOUND
    retryable = False


class ConfigFilesError(EtlCraftError):
    """A `config/` CSV file is unreadable or holds a row that can't be applied."""

    exit_code = ExitCode.CONFIG_FILES
    retryable = False


class AccessDeniedError(EtlCraftError):
    """The HTTP API refused a request: no token, a token it does not accept, or a role too small."""

    exit_code = ExitCode.ACCESS_DENIED
    retryable = False
