"""publish-docs through the real CLI: path safety on GET and HEAD, regeneration while serving, a
prefix deployment behind a small reverse proxy the test runs, trusted-proxy handling of
X-Forwarded-For, the recorded URL and its change rule, the ngrok refusal, and shutdown by SIGTERM."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import sqlalchemy as sa
from benchmarks.catalog_seed import seed_catalog

from etl_craft.engine.schema import tables as t
from tests.fixtures.cli import ETL_CRAFT, run_cli
from tests.fixtures.project import Project

pytestmark = pytest.mark.parametrize("dialect", [pytest.param("sqlite", marks=pytest.mark.sqlite)])
PROXY_SOURCE = "127.0.0.2"  # the proxy's outgoing address: the one Trusted_proxies names
VISITOR = "127.0.0.3"  # the one address Allowed_ips admits


class Served:
    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process = process
        self.url = url
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "", parts.port or 0

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


def request(host: str, port: int, path: str, method: str = "GET", *, source: str | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    conn = http.client.HTTPConnection(host, port, timeout=30, source_address=(source, 0) if source else None)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)  # the path goes out exactly as written
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def publish(project: Project, site: Path, *extra: str) -> Served:
    process = subprocess.Popen(
        [ETL_CRAFT, "--config", str(project.config_path), "publish-docs", "--output", str(site), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=project.env(),
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"at (http://\S+)", line)
    if not found:
        process.kill()
        raise AssertionError(f"publish-docs did not start: {line!r} {process.stderr.read() if process.stderr else ''}")
    return Served(process, found.group(1))


@pytest.fixture
def site(project: Project) -> Path:
    seed_catalog(project.open_db(), 3, 2, 2)
    folder = project.root / "site"
    built = run_cli("--config", str(project.config_path), "generate-docs", "--output", str(folder))
    assert built.returncode == 0, built
    return folder


def test_hidden_files_encoded_traversal_and_symlinks_out_are_404_on_get_and_head(project: Project, site: Path) -> None:
    (site / ".x").write_text("hidden", encoding="utf-8")
    (site / "a").mkdir()
    outside = project.root / "secret.txt"
    outside.write_text("outside the site", encoding="utf-8")
    (site / "out.txt").symlink_to(outside)
    (site / "a" / "index.html").symlink_to(outside)  # a directory index that leads out
    served = publish(project, site, "--local-only")
    try:
        for path in ("/.x", "/%2ex", "/a/../.x", "/%2e%2e/", "/%2e%2e/secret.txt", "/out.txt", "/a/", "/a",
                     "/.etl-craft-catalog", "/assets/.%2e/.%2e/secret.txt", "/nothing.html"):  # fmt: skip
            for method in ("GET", "HEAD"):
                status, _, body = request(served.host, served.port, path, method)
                assert status == 404, (method, path, status)
                assert b"outside the site" not in body and b"hidden" not in body
        status, headers, body = request(served.host, served.port, "/")
        assert status == 200 and b"Pipeline catalog" in body and headers["X-Robots-Tag"].startswith("noindex")
        status, headers, body = request(served.host, served.port, "/assets/style.css", "HEAD")
        assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0
    finally:
        assert served.stop() == 0


def test_regenerating_while_serving_breaks_no_request(project: Project, site: Path) -> None:
    served = publish(project, site, "--local-only")
    failures: list[str] = []
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            for path in ("/", "/pipelines/p0001.html", "/assets/search-index.js"):
                status, _, body = request(served.host, served.port, path)
                if status != 200 or (
                    (path.endswith(".html") or path == "/") and not body.rstrip().endswith(b"</html>")
                ):
                    failures.append(f"{path}: {status} {body[-40:]!r}")

    readers = [threading.Thread(target=hammer) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for round_ in range(3):
            with project.open_db().write() as conn:
                conn.execute(t.cfg_pipelines.update().where(t.cfg_pipelines.c.pipeline_code == "p0001")
                             .values(description=f"round {round_}"))  # fmt: skip
            rebuilt = run_cli("--config", str(project.config_path), "generate-docs", "--output", str(site))
            assert rebuilt.returncode == 0 and "wrote 1 page(s)" in rebuilt.stdout, rebuilt
    finally:
        stop.set()
        for reader in readers:
            reader.join()
        assert served.stop() == 0
    assert failures == []
    assert "round 2" in (site / "pipelines/p0001.html").read_text(encoding="utf-8")


class _Proxy(ThreadingHTTPServer):
    daemon_threads = True
    upstream: tuple[str, int]


class _ProxyHandler(BaseHTTPRequestHandler):
    """A reverse proxy as nginx's `proxy_pass` with `proxy_add_x_forwarded_for`: the path unchanged,
    the client's address appended to X-Forwarded-For, from its own source address."""

    server: _Proxy

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _relay(self, method: str) -> None:
        forwarded = self.headers.get("X-Forwarded-For")
        chain = f"{forwarded}, {self.client_address[0]}" if forwarded else self.client_address[0]
        status, headers, body = request(*self.server.upstream, self.path, method, source=PROXY_SOURCE,
                                        headers={"X-Forwarded-For": chain})  # fmt: skip
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("server", "date", "connection"):
                self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._relay("GET")

    def do_HEAD(self) -> None:
        self._relay("HEAD")


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    server = _Proxy(("127.0.0.1", 0), _ProxyHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _configure(project: Project, base_url: str) -> None:
    project.extra_sections = (
        f"Docs_site:\n  Base_url: {base_url}\n  Trusted_proxies: {PROXY_SOURCE}/32\n  Allowed_ips: {VISITOR}/32\n"
    )
    project.write_config()


def _crawl(host: str, port: int, start: str) -> set[str]:
    """Every page and asset reachable from `start` through href and src; asserts each answers 200."""
    seen, queue = set(), [start]
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        status, _, body = request(host, port, path, source=VISITOR)
        assert status == 200, (path, status)
        if path.endswith((".html", "/")):
            for link in re.findall(rb'(?:href|src)="([^"#]+)', body):
                target = urlsplit(urljoin(path, link.decode()))
                if not target.scheme:
                    queue.append(target.path)
    return seen


def test_a_prefix_behind_a_reverse_proxy_serves_every_page_and_forged_addresses_fail(
    project: Project, site: Path, proxy: _Proxy
) -> None:
    base = f"http://127.0.0.1:{proxy.server_address[1]}/catalog/"
    _configure(project, base)
    served = publish(project, site, "--local-only")
    proxy.upstream = (served.host, served.port)
    try:
        status, headers, _ = request("127.0.0.1", proxy.server_address[1], "/catalog", source=VISITOR)
        assert status == 301 and headers["Location"] == "/catalog/"
        reached = _crawl("127.0.0.1", proxy.server_address[1], "/catalog/")
        assert {"/catalog/", "/catalog/pipelines/p0000.html", "/catalog/assets/style.css",
                "/catalog/assets/search.js", "/catalog/assets/logo.svg"} <= reached  # fmt: skip
        assert len([p for p in reached if p.startswith("/catalog/tables/")]) == 6
        # A visitor outside Allowed_ips through the proxy, with or without a forged header: refused.
        proxy_port = proxy.server_address[1]
        assert request("127.0.0.1", proxy_port, "/catalog/")[0] == 403
        assert request("127.0.0.1", proxy_port, "/catalog/", headers={"X-Forwarded-For": VISITOR})[0] == 403
        # Straight to the server from an address that is no trusted proxy: the header is not believed.
        assert (
            request(served.host, served.port, "/catalog/", source="127.0.0.1", headers={"X-Forwarded-For": VISITOR})[0]
            == 403
        )
        assert request(served.host, served.port, "/catalog/", source=VISITOR)[0] == 200
    finally:
        assert served.stop() == 0
    with project.open_db().read() as conn:
        assert conn.execute(sa.select(t.aud_docs_publication.c.published_url)).scalars().all() == [base]


def test_a_changed_url_is_refused_unless_accepted_and_ngrok_needs_an_authtoken(project: Project, site: Path) -> None:
    _configure(project, "https://intranet.example.com/catalog/")
    publish(project, site, "--local-only").stop()
    _configure(project, "https://docs.example.com/")
    refused = run_cli("--config", str(project.config_path), "publish-docs", "--output", str(site), "--local-only")
    assert refused.returncode == 3 and "--accept-new-url" in refused.stderr and "intranet.example.com" in refused.stderr
    assert publish(project, site, "--local-only", "--accept-new-url").stop() == 0
    with project.open_db().read() as conn:
        urls = conn.execute(sa.select(t.aud_docs_publication.c.published_url)
                            .order_by(t.aud_docs_publication.c.docs_publication_id)).scalars().all()  # fmt: skip
    assert urls == ["https://intranet.example.com/catalog/", "https://docs.example.com/"]
    no_token = run_cli("--config", str(project.config_path), "publish-docs", "--output", str(site))
    assert no_token.returncode == 3 and "Docs_site.Authtoken" in no_token.stderr and "--local-only" in no_token.stderr
    missing = run_cli(
        "--config", str(project.config_path), "publish-docs", "--output", str(project.root / "none"), "--local-only"
    )
    assert missing.returncode == 24 and "generate-docs" in missing.stderr
    assert not os.path.exists(project.root / "none")
