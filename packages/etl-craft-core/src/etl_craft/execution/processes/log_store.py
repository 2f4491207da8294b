"""Logs.Store (S6.B): where attempt log files go once their attempt's process has ended, so that a
host can lose Orchestration.Log_dir without losing a log.

A store is a `file://` folder or an `s3://bucket/prefix` (boto3, imported on first use; the endpoint
comes from boto3's own AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_S3, credentials from its usual chain).
An object's key is the last three parts of the attempt's LOG_PATH (`<pipeline>/run-<id>/<file>`,
which `attempt_log_path` always produces), so any host derives it from the Engine DB row alone,
whatever its own Log_dir.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from etl_craft.core.errors import ConfigurationError, ConnectionTestError

log = logging.getLogger(__name__)
S3_DELETE_BATCH = 1000  # DeleteObjects takes at most 1,000 keys


def store_key(log_path: str) -> str:
    return "/".join(PurePosixPath(log_path).parts[-3:])


class LogStore:
    """One store: put a finished log, read a byte range of it, delete logs of purged attempts."""

    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        self.scheme = parts.scheme
        if parts.scheme == "file":
            self.root = Path(parts.path)
            self.bucket, self.prefix = "", ""
        else:
            self.root = Path()
            self.bucket, self.prefix = parts.netloc, parts.path.strip("/")
        self._client: Any = None

    def _s3(self) -> Any:
        if self._client is None:
            try:
                import boto3
            except ImportError:
                raise ConfigurationError(
                    f"Logs.Store {self.url}",
                    found="boto3 is not installed",
                    expected="boto3 for an s3:// store",
                    remedy="install the extra: pip install 'etl-craft-core[aws]'",
                ) from None
            self._client = boto3.session.Session().client("s3")
        return self._client

    def _object(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def location(self, log_path: str) -> str:
        return f"{self.url.rstrip('/')}/{store_key(log_path)}"

    def _failed(self, log_path: str, doing: str, error: Exception) -> ConnectionTestError:
        return ConnectionTestError(
            f"the object {log_path} in {self.url}",
            found=f"{doing} failed: {type(error).__name__}: {error}",
            expected=f"a store this host can {doing}",
            remedy="check the address, its permissions and the credentials; nothing was removed or lost",
        )

    def put(self, log_path: str) -> None:
        """Copy a finished log to the store (a log the process never opened is skipped)."""
        if not os.path.exists(log_path):
            return
        key = store_key(log_path)
        try:
            if self.scheme == "file":
                target = self.root / key
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(log_path, f"{target}.part")
                os.replace(f"{target}.part", target)  # a reader never sees half a log
            else:
                self._s3().upload_file(log_path, self.bucket, self._object(key))
        except Exception as error:  # OSError, botocore's ClientError and the like
            raise self._failed(log_path, "write", error) from error

    def write(self, key: str, data: bytes) -> None:
        """One object of `purge --archive-to` (the same two kinds of address as a log store)."""
        try:
            if self.scheme == "file":
                target = self.root / key
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            else:
                self._s3().put_object(Bucket=self.bucket, Key=self._object(key), Body=data)
        except Exception as error:  # OSError, botocore's ClientError and the like
            raise self._failed(f"{self.url.rstrip('/')}/{key}", "write", error) from error

    def read(self, log_path: str, offset: int, limit: int) -> tuple[bytes, int] | None:
        """Up to `limit` bytes from `offset` and the object's size; None when the store has no such log."""
        key = store_key(log_path)
        if self.scheme == "file":
            try:
                with open(self.root / key, "rb") as fh:
                    size = fh.seek(0, os.SEEK_END)
                    fh.seek(min(offset, size))
                    return fh.read(limit), size
            except FileNotFoundError:
                return None
        client = self._s3()
        try:
            size = int(client.head_object(Bucket=self.bucket, Key=self._object(key))["ContentLength"])
        except client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise self._failed(log_path, "read", error) from error
        if offset >= size or limit <= 0:
            return b"", size
        end = min(size, offset + limit) - 1
        body = client.get_object(Bucket=self.bucket, Key=self._object(key), Range=f"bytes={offset}-{end}")["Body"]
        return body.read(), size

    def delete(self, log_paths: Iterable[str]) -> None:
        keys = [store_key(path) for path in log_paths]
        if self.scheme == "file":
            for key in keys:
                (self.root / key).unlink(missing_ok=True)
            return
        client = self._s3()
        for start in range(0, len(keys), S3_DELETE_BATCH):
            chunk = keys[start : start + S3_DELETE_BATCH]
            client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": self._object(k)} for k in chunk], "Quiet": True}
            )


@functools.lru_cache(maxsize=4)
def open_store(url: str | None) -> LogStore | None:
    """One store object (and boto3 client) per address in a process."""
    return LogStore(url) if url else None


def ship_log(url: str | None, log_path: str) -> None:
    """Called by the attempt's owner once its process has ended and the file is masked. A store that
    refuses is logged, not raised: the attempt's outcome is already recorded and the local file stays."""
    store = open_store(url)
    if store is None:
        return
    try:
        store.put(log_path)
    except ConnectionTestError as error:
        log.warning("%s", error.message)
