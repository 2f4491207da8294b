"""One local SparkSession per test session, for the Databricks proof (marker databricks_spark).

Spark starts once (tens of seconds on a JVM) and every test shares it, each in a schema of its own.
No Maven repository can be reached here, so the session has no Delta Lake jars: it runs Spark SQL's
own tables, and the statements only Delta can run are parsed by Spark's parser instead
(docs/warehouses/databricks.md, proof).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.fail("no Java runtime on PATH: install Debian's openjdk-17-jre-headless")
    pyspark = pytest.importorskip("pyspark.sql", reason="pyspark is not installed: uv sync --group spark")
    folder: Path = tmp_path_factory.mktemp("spark")
    session = (
        pyspark.SparkSession.builder.master("local[1]")
        .appName("etl-craft-databricks-proof")
        .config("spark.sql.warehouse.dir", str(folder / "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={folder}")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "America/New_York")  # the dialect's SET TIME ZONE must win
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
