import pytest

pytestmark = pytest.mark.unit


def test_the_warehouses_distribution_imports_and_names_its_version() -> None:
    import etl_craft_warehouses

    assert etl_craft_warehouses.__version__ == "0.1.0"
