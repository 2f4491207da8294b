"""Write docs/reference/openapi.json, the OpenAPI description of the HTTP API, from the app itself.

Run after changing an endpoint, from the repository root: uv run python -m tools.generate_openapi
(tests/server/api/test_openapi.py fails while the committed file differs from what the app serves).
"""

from __future__ import annotations

from pathlib import Path

from etl_craft_server.api.app import openapi_text

TARGET = Path(__file__).resolve().parent.parent / "docs/reference/openapi.json"

if __name__ == "__main__":
    TARGET.write_text(openapi_text(), encoding="utf-8")
    print(f"wrote {TARGET}")
