"""Keeping secrets out of logs: masking the secret values etl-craft resolved, and URL loggers kept quiet.

The mask works on text and on byte streams. A stream is masked chunk by chunk as it is written, so
a secret split across two writes is still caught: the end of a chunk that could be the start of a
secret is held back until the next chunk (or the end of the stream) shows what follows it.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import quote, quote_plus

from etl_craft.core.text import REDACTED

# Libraries that log request URLs (API keys in query strings included) at INFO or DEBUG.
URL_LOGGERS = ("urllib3", "httpx", "httpcore", "requests", "botocore", "boto3", "s3transfer")
_MASK = REDACTED.encode()


def quiet_url_loggers(level: int | None = None) -> None:
    """Keep URL-logging libraries at WARNING unless `level` (else the root logger's level) is DEBUG."""
    if level is None:
        level = logging.getLogger().getEffectiveLevel()
    chosen = logging.DEBUG if level <= logging.DEBUG else logging.WARNING
    for name in URL_LOGGERS:
        logging.getLogger(name).setLevel(chosen)


def _forms(value: str) -> set[bytes]:
    """A secret as it may appear in a log: as is, and percent-encoded as in a URL's query."""
    return {form.encode() for form in (value, quote(value, safe=""), quote_plus(value, safe="")) if form}


class SecretMask:
    """Replaces every known secret value with *** (longest values first, so none is half-masked)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values = frozenset(v for v in values if v)
        self._forms = sorted({f for v in self.values for f in _forms(v)}, key=len, reverse=True)
        self._pattern = re.compile(b"|".join(re.escape(f) for f in self._forms)) if self._forms else None
        self._longest = len(self._forms[0]) if self._forms else 0

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __repr__(self) -> str:
        return f"SecretMask({len(self.values)} values)"  # never the values

    def redact_bytes(self, data: bytes) -> tuple[bytes, int]:
        """The data with every secret masked, and how many were."""
        if self._pattern is None:
            return data, 0
        return self._pattern.subn(_MASK, data)

    def redact(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        masked, count = self.redact_bytes(text.encode("utf-8", errors="surrogateescape"))
        return masked.decode("utf-8", errors="surrogateescape") if count else text

    def unsafe_tail(self, data: bytes) -> int:
        """How many bytes at the end of `data` could be the start of a secret (0 when none)."""
        for size in range(min(self._longest - 1, len(data)), 0, -1):
            tail = data[-size:]
            if any(form.startswith(tail) for form in self._forms):
                return size
        return 0


class StreamMask:
    """Masks a byte stream chunk by chunk; the secrets are read from `values` before each chunk,
    so a secret resolved while the stream is open is masked from then on."""

    def __init__(self, values: Callable[[], Iterable[str]]) -> None:
        self._values = values
        self._mask = SecretMask()
        self._held = b""
        self.masked = 0  # how many secrets were replaced so far

    def _current(self) -> SecretMask:
        values = frozenset(v for v in self._values() if v)
        if values != self._mask.values:
            self._mask = SecretMask(values)
        return self._mask

    def feed(self, data: bytes) -> bytes:
        """What can be written now; the end that may begin a secret is kept for the next call."""
        mask = self._current()
        out, count = mask.redact_bytes(self._held + data)
        self.masked += count
        keep = mask.unsafe_tail(out)
        self._held = out[len(out) - keep :] if keep else b""
        return out[: len(out) - keep] if keep else out

    def flush(self) -> bytes:
        """Everything held back, masked: at the end of the stream or when the writer must be in sync."""
        held, self._held = self._held, b""
        out, count = self._current().redact_bytes(held)
        self.masked += count
        return out


def redact_file(path: str | Path, values: Iterable[str]) -> bool:
    """Rewrite a file with every secret masked (through a temporary file, then a rename).

    Returns whether anything was masked; a file without secrets is left untouched.
    """
    mask = SecretMask(values)
    if not mask:
        return False
    stream = StreamMask(lambda: mask.values)
    target = Path(path)
    try:
        source = target.open("rb")
    except OSError:
        return False
    with source:
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := source.read(1 << 20):
                    out.write(stream.feed(chunk))
                out.write(stream.flush())
            if not stream.masked:
                os.unlink(temp)
                return False
            os.chmod(temp, os.stat(target).st_mode & 0o777)
            os.replace(temp, target)
        except BaseException:
            if os.path.exists(temp):
                os.unlink(temp)
            raise
    return True
