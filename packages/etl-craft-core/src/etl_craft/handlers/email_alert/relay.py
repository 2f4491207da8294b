"""Handing a message over: an SMTP relay, the sendmail program, or the project's outbox folder.

The headers are built inside the same error handling as the delivery, so a header problem is
reported like a relay problem. Every failure names the relay, the step that failed (connect, start
TLS, log in, send, build headers) and the relay's answer. Both TLS modes verify the certificate and
the host name, against the system's trust store or `ca_file`.
"""

from __future__ import annotations

import os
import smtplib
import socket
import ssl
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formataddr, formatdate, make_msgid
from pathlib import Path

from etl_craft.config.model import ConnectorConfig, EmailSettings
from etl_craft.core.errors import HandlerError
from etl_craft.core.text import one_line

TIMEOUT_SECONDS = 30.0
DEFAULT_PORTS = {"starttls": 587, "ssl": 465, "none": 25}
OUTBOX = "outbox"
NO_RELAY_SENDER = "etl-craft@localhost"


class RelayError(HandlerError):
    """The relay could not take the message; a later attempt may succeed."""


class RecipientsRefusedError(HandlerError):
    """The relay refused every recipient; sending again would be refused the same way."""

    retryable = False


@dataclass(frozen=True)
class Letter:
    sender: str  # the From header: `Name <address>` or an address
    sender_address: str
    recipients: tuple[str, ...]
    subject: str
    body: str
    extra_headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Handover:
    """What happened to a message that was not refused as a whole."""

    relay: str  # how it was handed over, for TASK_LOG
    refused: dict[str, str]  # recipient -> the relay's answer, for a partial refusal
    outbox_path: Path | None = None


def build_message(letter: Letter) -> EmailMessage:
    message = EmailMessage()
    message["From"] = letter.sender
    message["To"] = ", ".join(letter.recipients)
    message["Subject"] = letter.subject
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(domain=letter.sender_address.rpartition("@")[2] or None)
    for name, value in letter.extra_headers:
        message[name] = value
    message.set_content(letter.body)
    return message


def sender_of(settings: EmailSettings | None) -> tuple[str, str]:
    """(From header, envelope address) from the Email section, or etl-craft's own for the outbox."""
    if settings is None or settings.from_address is None:
        return formataddr(("etl-craft", NO_RELAY_SENDER)), NO_RELAY_SENDER
    if settings.from_name:
        name, _, domain = settings.from_address.rpartition("@")
        return str(Address(settings.from_name, name, domain)), settings.from_address
    return settings.from_address, settings.from_address


def _answer(error: BaseException) -> str:
    """The relay's answer (SMTP code and text), or the error as the client saw it."""
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        return "; ".join(f"{rcpt}: {_reply(code, text)}" for rcpt, (code, text) in error.recipients.items())
    if isinstance(error, smtplib.SMTPResponseException):
        return _reply(error.smtp_code, error.smtp_error)
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"certificate not trusted: {error.verify_message or error.reason}"
    if isinstance(error, socket.timeout | TimeoutError):
        return f"no answer within {TIMEOUT_SECONDS:g} s"
    text = one_line(str(error), 300) or type(error).__name__
    return f"{type(error).__name__}: {text}"


def _reply(code: int, text: bytes | str) -> str:
    shown = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else str(text)
    return f"{code} {one_line(shown, 300)}"


def _relay_error(relay: str, step: str, error: BaseException, remedy: str) -> HandlerError:
    kind = RecipientsRefusedError if isinstance(error, smtplib.SMTPRecipientsRefused) else RelayError
    return kind(f"email relay {relay}", found=f"{step} failed: {_answer(error)}", remedy=remedy)


_REMEDIES = {
    "build headers": "correct the sender (Orchestration.Email.from_address/from_name) or the recipients (EMAIL_TO)",
    "connect": "check Orchestration.Email host, port and tls_mode (ssl for port 465), and that the relay is up",
    "start TLS": "check the relay's certificate and host name, or set ca_file to the CA that signed it",
    "log in": "check Orchestration.Email user and the variable named by secret",
    "send": "check the recipients (EMAIL_TO) and the sender the relay accepts",
}


def _steps(relay: str) -> Callable[[str, BaseException], HandlerError]:
    def fail(step: str, error: BaseException) -> HandlerError:
        # With implicit TLS the handshake is part of connecting; its remedy is the certificate's.
        remedy = _REMEDIES["start TLS"] if isinstance(error, ssl.SSLError) else _REMEDIES[step]
        return _relay_error(relay, step, error, remedy)

    return fail


def send_smtp(config: ConnectorConfig, settings: EmailSettings, letter: Letter) -> Handover:
    mode = settings.tls_mode
    host = settings.host or "localhost"
    port = settings.port or DEFAULT_PORTS[mode]
    relay = f"{host}:{port} ({mode})"
    fail = _steps(relay)
    if settings.auth_mode == "oauth":
        raise RelayError(
            f"email relay {relay}",
            found="auth_mode oauth (SMTP XOAUTH2)",
            expected="auth_mode none or password: EMAIL_ALERT does not fetch OAuth tokens yet",
            remedy="use auth_mode: password with an app password, or a relay that accepts this host without login",
        )
    try:
        message = build_message(letter)
    except (ValueError, TypeError) as error:
        raise fail("build headers", error) from None
    context = ssl.create_default_context(cafile=str(settings.ca_file) if settings.ca_file else None)
    step = "connect"
    try:
        client: smtplib.SMTP
        if mode == "ssl":
            client = smtplib.SMTP_SSL(host, port, timeout=TIMEOUT_SECONDS, context=context)
        else:
            client = smtplib.SMTP(host, port, timeout=TIMEOUT_SECONDS)
        with client:
            if mode == "starttls":
                step = "start TLS"
                client.ehlo()
                client.starttls(context=context)
                client.ehlo()
            if settings.auth_mode == "password":
                step = "log in"
                client.login(settings.user or "", config.secret(settings.secret_var or ""))
            step = "send"
            refused = client.send_message(message, letter.sender_address, list(letter.recipients))
    except (smtplib.SMTPException, ssl.SSLError, OSError) as error:
        raise fail(step, error) from None
    return Handover(relay, {rcpt: _reply(code, text) for rcpt, (code, text) in refused.items()})


def send_sendmail(settings: EmailSettings, letter: Letter) -> Handover:
    program = str(settings.sendmail_path or "/usr/sbin/sendmail")
    relay = f"sendmail {program}"
    fail = _steps(relay)
    try:
        message = build_message(letter)
        data = message.as_bytes()
    except (ValueError, TypeError) as error:
        raise fail("build headers", error) from None
    try:
        done = subprocess.run(
            [program, "-i", "-f", letter.sender_address, "--", *letter.recipients],
            input=data,
            capture_output=True,
            timeout=TIMEOUT_SECONDS * 2,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise fail("connect", error) from None
    if done.returncode != 0:
        output = one_line((done.stderr or done.stdout).decode("utf-8", errors="replace"), 300) or "no output"
        raise RelayError(
            f"email relay {relay}",
            found=f"send failed: exit status {done.returncode}: {output}",
            remedy=_REMEDIES["send"],
        )
    return Handover(relay, {})


def write_outbox(project_dir: Path, name: str, letter: Letter) -> Handover:
    """No relay configured: the message is kept as an .eml file under <project>/outbox/."""
    folder = project_dir / OUTBOX
    relay = f"the outbox {folder}"
    fail = _steps(relay)
    try:
        data = build_message(letter).as_bytes()
    except (ValueError, TypeError) as error:
        raise fail("build headers", error) from None
    target = folder / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, target)
    except OSError as error:
        raise fail("send", error) from None
    return Handover(relay, {}, target)


def hand_over(config: ConnectorConfig, letter: Letter, outbox_name: str) -> Handover:
    settings = config.orchestration.email
    if settings is None:
        return write_outbox(config.project_dir, outbox_name, letter)
    if settings.transport == "sendmail":
        return send_sendmail(settings, letter)
    return send_smtp(config, settings, letter)


def refused_summary(refused: dict[str, str], recipients: Sequence[str]) -> str:
    listed = "; ".join(f"{rcpt} ({answer})" for rcpt, answer in refused.items())
    return f"the relay refused {len(refused)} of {len(recipients)} recipient(s): {listed}"
