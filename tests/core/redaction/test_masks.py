"""Masking resolved secrets in text, in streams cut at any byte, and in files; URL loggers kept quiet."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import quote

import pytest

from etl_craft.core.redaction import URL_LOGGERS, SecretMask, StreamMask, quiet_url_loggers, redact_file

pytestmark = pytest.mark.unit

SECRET = "s3cr3t/key+v@lue"


def test_every_form_of_a_secret_is_masked_longest_first() -> None:
    mask = SecretMask([SECRET, "s3cr3t"])
    text = f"a={SECRET} b={quote(SECRET, safe='')} c=s3cr3t d=s3cr"
    assert mask.redact(text) == "a=*** b=*** c=*** d=s3cr"
    assert repr(mask) == "SecretMask(2 values)"
    assert SecretMask([]).redact(text) == text


def test_a_stream_cut_at_every_byte_is_masked_as_a_whole() -> None:
    data = f"start {SECRET} middle {SECRET}{SECRET} end {SECRET[:-1]}".encode()
    for cut in range(1, len(data)):
        stream = StreamMask(lambda: [SECRET])
        out = stream.feed(data[:cut]) + stream.feed(data[cut:]) + stream.flush()
        assert out == f"start *** middle ****** end {SECRET[:-1]}".encode(), cut
        assert stream.masked == 3


def test_a_secret_resolved_later_is_masked_from_then_on() -> None:
    known: list[str] = []
    stream = StreamMask(lambda: known)
    assert stream.feed(b"before s3cr3t\n") == b"before s3cr3t\n"
    known.append("s3cr3t")
    assert stream.feed(b"after s3cr3t\n") == b"after ***\n"


def test_a_file_is_rewritten_only_when_it_holds_a_secret(tmp_path: Path) -> None:
    log = tmp_path / "task.log"
    log.write_text(f"line one\nurl?api_key={SECRET}&x=1\n")
    log.chmod(0o640)
    assert redact_file(log, [SECRET]) is True
    assert log.read_text() == "line one\nurl?api_key=***&x=1\n"
    assert log.stat().st_mode & 0o777 == 0o640
    before = log.stat().st_mtime_ns
    assert redact_file(log, [SECRET]) is False
    assert log.stat().st_mtime_ns == before
    assert redact_file(tmp_path / "missing.log", [SECRET]) is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task.log"]  # no temporary file left


@pytest.mark.parametrize(("level", "expected"), [(logging.INFO, logging.WARNING), (logging.DEBUG, logging.DEBUG)])
def test_url_loggers_stay_at_warning_unless_debugging(level: int, expected: int) -> None:
    saved = {name: logging.getLogger(name).level for name in URL_LOGGERS}
    try:
        quiet_url_loggers(level)
        assert {logging.getLogger(name).level for name in URL_LOGGERS} == {expected}
    finally:
        for name, value in saved.items():
            logging.getLogger(name).setLevel(value)
