import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def test_the_airflow_factory_imports_without_importing_etl_craft() -> None:
    # The DAG factory reads generated YAML only; importing it must not pull in the engine.
    code = "import sys, etl_craft_airflow; print(etl_craft_airflow.__version__, 'etl_craft' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0.1.0", "False"]
