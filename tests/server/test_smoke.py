import pytest

pytestmark = pytest.mark.unit


def test_the_server_distribution_imports_and_names_its_version() -> None:
    import etl_craft_server

    assert etl_craft_server.__version__ == "0.1.0"
