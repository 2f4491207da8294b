"""The warehouse compliance suite: one set of scenarios that every installed warehouse dialect runs.

The `warehouse` fixture is parametrised over the provisions of the installed dialects (the
`etl_craft.warehouse_provisions` entry points), so a dialect from any distribution runs these
scenarios as it is. What differs between warehouses is read from the dialect's capabilities or the
provision's facts, never from the warehouse's name; a scenario only some warehouses can run is
marked `requires(...)` with the requirements a provision declares, and is skipped elsewhere.
`smoke` marks the first subset a new dialect runs (docs/contributing/warehouses.md).
"""

from __future__ import annotations

import pytest

from etl_craft_warehouses.provision import REQUIREMENTS
from tests.fixtures.warehouse import Warehouse


@pytest.fixture(autouse=True)
def _requirements(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("requires")
    if marker is None:
        return
    unknown = set(marker.args) - REQUIREMENTS
    assert not unknown, f"unknown requirement(s) {sorted(unknown)}; known: {sorted(REQUIREMENTS)}"
    warehouse: Warehouse = request.getfixturevalue("warehouse")
    missing = set(marker.args) - warehouse.provision.requirements
    if missing:
        pytest.skip(f"the {warehouse.kind} provision does not declare {', '.join(sorted(missing))}")
