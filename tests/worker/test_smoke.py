import pytest

pytestmark = pytest.mark.unit


def test_the_worker_distribution_imports_and_names_its_version() -> None:
    import etl_craft_worker

    assert etl_craft_worker.__version__ == "0.1.0"
