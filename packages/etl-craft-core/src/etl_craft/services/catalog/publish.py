"""`publish-docs`: serve the catalog folder locally, behind an organization's reverse proxy, or
through ngrok, and record the shared URL (a changed URL is refused unless accepted)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from etl_craft.core.clock import utc_now
from etl_craft.core.errors import ConfigurationError, ResourceNotFoundError
from etl_craft.engine.records.docs_publication import current_url, record_url
from etl_craft.execution.run_loop.signals import StopSignals
from etl_craft.services.catalog import catalog_folder
from etl_craft.services.catalog.serving import CatalogServer
from etl_craft.services.catalog.site import MARKER
from etl_craft.services.context import OperationContext

log = logging.getLogger("etl_craft.publish_docs")


@dataclass(frozen=True)
class Publication:
    folder: Path
    local_url: str
    public_url: str | None  # recorded in AUD_DOCS_PUBLICATION; None when served locally only
    via: str  # local | proxy | ngrok


def _check_url(ctx: OperationContext, url: str, accept_new_url: bool) -> None:
    with ctx.db.write() as conn:
        current = current_url(conn)
        if current is not None and current != url and not accept_new_url:
            raise ConfigurationError(
                f"the catalog's published URL {url}",
                found=f"it was published at {current}; links shared before would stop working",
                expected="the same URL as before",
                remedy="publish at the old URL, or pass --accept-new-url to record the new one",
            )
        record_url(conn, url, utc_now())


def _ngrok_tunnel(ctx: OperationContext, port: int) -> Any:
    site = ctx.config.docs_site
    if site is None or site.authtoken_var is None:
        raise ConfigurationError(
            "publish-docs through ngrok",
            found="no Docs_site.Authtoken in the configuration",
            expected="Docs_site.Authtoken naming the variable that holds your ngrok authtoken",
            remedy="set Docs_site.Authtoken, or serve without ngrok: --local-only (behind a proxy: Docs_site.Base_url)",
        )
    try:
        import ngrok  # optional: only this path needs it
    except ImportError:
        raise ConfigurationError(
            "publish-docs through ngrok",
            found="the ngrok Python package is not installed",
            expected="the ngrok package beside etl-craft",
            remedy="pip install ngrok, or serve without it: --local-only",
        ) from None
    options: dict[str, Any] = {"authtoken": ctx.config.secret(site.authtoken_var)}
    if site.domain:
        options["domain"] = site.domain
    if site.allowed_ips:
        options["ip_restriction_allow_cidrs"] = list(site.allowed_ips)
    return ngrok.forward(port, **options)


def publish_docs(
    ctx: OperationContext,
    output: Path | None,
    *,
    local_only: bool,
    host: str,
    port: int,
    accept_new_url: bool,
    ready: Callable[[Publication], None],
) -> Publication:
    folder = catalog_folder(ctx, output)
    if not (folder / MARKER).is_file() or not (folder / "index.html").is_file():
        raise ResourceNotFoundError(
            f"catalog folder {folder}",
            found="no catalog written there",
            expected="a folder etl-craft generate-docs wrote",
            remedy="run etl-craft generate-docs first (with the same --output)",
        )
    site = ctx.config.docs_site
    base_url = site.base_url if site else None
    prefix = urlsplit(base_url).path if base_url else "/"
    # ngrok sees only the tunnel's own address; its Allowed_ips are enforced by ngrok itself.
    allowed = (site.allowed_ips if site else ()) if local_only else ()
    server = CatalogServer((host, port), folder, prefix, allowed, site.trusted_proxies if site else ())
    tunnel = None
    try:
        bound_host, bound_port = str(server.server_address[0]), int(server.server_address[1])
        local_url = f"http://{bound_host}:{bound_port}{prefix}"
        if local_only:
            public_url, via = base_url, "proxy" if base_url else "local"
        else:
            tunnel = _ngrok_tunnel(ctx, bound_port)
            public_url, via = str(tunnel.url()).rstrip("/") + "/", "ngrok"
        if public_url:
            _check_url(ctx, public_url, accept_new_url)
        publication = Publication(folder, local_url, public_url, via)
        signals = StopSignals("etl-craft publish-docs")
        with signals.installed():
            thread = threading.Thread(target=server.serve_forever, name="catalog-server", daemon=True)
            thread.start()
            ready(publication)
            while signals.sleep(1.0):
                pass
            log.info("publish-docs: %s", signals.reason)
            server.shutdown()
            thread.join()
        return publication
    finally:
        if tunnel is not None:
            tunnel.close()
        server.server_close()
