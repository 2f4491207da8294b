"""AUD_DOCS_PUBLICATION: the URL the catalog is published at; the latest row is the current one."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine.schema.tables import aud_docs_publication as publication


def current_url(conn: sa.Connection) -> str | None:
    latest = sa.select(publication.c.published_url).order_by(
        publication.c.last_published.desc(), publication.c.docs_publication_id.desc()
    )
    return conn.execute(latest.limit(1)).scalar_one_or_none()


def record_url(conn: sa.Connection, url: str, now: datetime) -> None:
    """Mark `url` published now: its row's LAST_PUBLISHED moves on, or it gets its first row."""
    updated = conn.execute(publication.update().where(publication.c.published_url == url).values(last_published=now))
    if not updated.rowcount:
        conn.execute(publication.insert().values(published_url=url, first_published=now, last_published=now))
