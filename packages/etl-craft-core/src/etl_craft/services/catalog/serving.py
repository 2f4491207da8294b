"""The catalog's HTTP server: files of one folder, one path check for every request (B65).

A request path is URL-decoded and split; any segment that starts with `.` (hidden files, `..`, and
their encoded forms) and anything that resolves outside the folder (a symlink out) is a 404, for GET
and HEAD alike. Behind a reverse proxy the site may sit under a path prefix (served whether or not
the proxy strips it), and the visitor's address is taken from X-Forwarded-For only when the peer is
a trusted proxy, so `Allowed_ips` cannot be passed by forging the header.
"""

from __future__ import annotations

import ipaddress
import logging
import mimetypes
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

log = logging.getLogger("etl_craft.publish_docs")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(texts: Sequence[str]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(text, strict=False) for text in texts)


def _inside(address: str, allowed: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in allowed)


def visitor_address(peer: str, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The visitor: the peer, unless the peer is a trusted proxy; then, walking X-Forwarded-For from
    the right, the first address that is not a trusted proxy (each proxy appends what it saw)."""
    if not forwarded_for or not _inside(peer, trusted):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    while hops:
        hop = hops.pop()
        if not _inside(hop, trusted) or not hops:
            return hop
    return peer


def safe_file(root: Path, relative: str) -> Path | None:
    """The file `relative` (still URL-encoded) names inside `root`, or None for anything refused."""
    decoded = unquote(relative)
    if "\x00" in decoded or "\\" in decoded:
        return None
    segments = decoded.split("/")
    if any(segment.startswith(".") for segment in segments):
        return None
    target = root.joinpath(*[s for s in segments if s])
    if decoded == "" or decoded.endswith("/") or target.is_dir():
        target = target / "index.html"
    try:
        real = target.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_relative_to(root.resolve()) or not real.is_file():
        return None
    return real


class CatalogServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], root: Path, prefix: str, allowed: Sequence[str], trusted: Sequence[str]
    ) -> None:
        self.root = root.resolve()
        self.prefix = prefix if prefix.endswith("/") else prefix + "/"
        self.allowed = networks(allowed)
        self.trusted = networks(trusted)
        super().__init__(address, CatalogHandler)


class CatalogHandler(BaseHTTPRequestHandler):
    server: CatalogServer
    server_version = "etl-craft-catalog"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _status(self, status: HTTPStatus, body: bool, location: str | None = None) -> None:
        text = f"{status.value} {status.phrase}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(text)))
        if location:
            self.send_header("Location", location)
        self.end_headers()
        if body:
            self.wfile.write(text)

    def _answer(self, *, body: bool) -> None:
        server = self.server
        if server.allowed:
            visitor = visitor_address(self.client_address[0], self.headers.get("X-Forwarded-For"), server.trusted)
            if not _inside(visitor, server.allowed):
                log.info("refused %s: not in Docs_site.Allowed_ips", visitor)
                self._status(HTTPStatus.FORBIDDEN, body)
                return
        path = urlsplit(self.path).path
        prefix = server.prefix
        if prefix != "/" and path == prefix.rstrip("/"):
            self._status(HTTPStatus.MOVED_PERMANENTLY, body, location=prefix)
            return
        relative = path[len(prefix) :] if path.startswith(prefix) else path.lstrip("/")
        found = safe_file(server.root, relative)
        if found is None:
            self._status(HTTPStatus.NOT_FOUND, body)
            return
        try:
            data = found.read_bytes()  # pages are replaced by rename: this is one whole version
        except OSError:
            self._status(HTTPStatus.NOT_FOUND, body)
            return
        kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        self.send_response(HTTPStatus.OK)
        self.send_header(
            "Content-Type",
            f"{kind}; charset=utf-8" if kind.startswith("text/") or kind.endswith("javascript") else kind,
        )
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Robots-Tag", "noindex, nofollow")
        self.end_headers()
        if body:
            self.wfile.write(data)
