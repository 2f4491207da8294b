"""The Airflow DAG factory for etl-craft YAML exports; never imports etl_craft.

In a DAG file of the Airflow DAGs folder::

    from etl_craft_airflow import dags_from_folder

    globals().update(dags_from_folder("/opt/airflow/etl-craft-dags"))
"""

from __future__ import annotations

from etl_craft_airflow.document import DagFileError, read_folder
from etl_craft_airflow.factory import dags_from_folder

__version__ = "0.1.0"
__all__ = ["DagFileError", "dags_from_folder", "read_folder"]
