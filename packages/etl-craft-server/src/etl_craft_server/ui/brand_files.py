"""The brand's favicon and logo, served by the UI itself from `etl_craft.brand` (no data: URL, no CDN).

No sign-in is needed: the sign-in page shows them too, and they hold nothing private.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import Response

from etl_craft.brand import asset

router = APIRouter()
_TYPES = {".svg": "image/svg+xml", ".png": "image/png"}
_ONE_DAY = 24 * 3600  # assets change only with a release; a day keeps page loads to the page itself


@router.get("/brand/{name}")
def brand_file(name: Annotated[str, Path(pattern=r"^[a-z0-9-]+\.(svg|png)$", max_length=64)]) -> Response:
    """One asset by its file name; an unknown name is a 404 naming the assets there are."""
    body = asset(name)
    return Response(
        body,
        media_type=_TYPES[name[name.rindex(".") :]],
        headers={"Cache-Control": f"public, max-age={_ONE_DAY}", "X-Content-Type-Options": "nosniff"},
    )
