"""What the overseer keeps of the metadata: pipelines, their graphs and schedules, reloaded only when
the metadata version (the newest AUD_METADATA_CHANGES id, which every CFG_ insert, update and delete
moves) changes. Graphs load lazily, many in one set of queries; a graph that can't load is remembered
with its reason until the metadata changes, so a broken pipeline costs one log line, not one per pass."""

from __future__ import annotations

import logging

import sqlalchemy as sa

from etl_craft.core.errors import EtlCraftError
from etl_craft.engine import reads
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import PipelineRow
from etl_craft.engine.schema import tables as t
from etl_craft.execution.graph import Graph, load_graphs
from etl_craft_server.schedules import Schedules

log = logging.getLogger("etl_craft.server")


class MetadataCache:
    def __init__(self, db: EngineDb, schedules: Schedules) -> None:
        self.db, self.schedules = db, schedules
        self.pipelines: dict[int, PipelineRow] = {}
        self.graphs: dict[int, Graph] = {}
        self.broken: dict[int, str] = {}  # pipeline id -> why its graph can't load
        self.version: int | None = -1  # -1: never read; None: no change recorded yet

    def refresh(self) -> None:
        """Reload pipelines and schedules (and forget the graphs) if the metadata changed."""
        changes = t.aud_metadata_changes
        with self.db.read() as conn:
            version = conn.execute(sa.select(sa.func.max(changes.c.change_id))).scalar()
            if version == self.version:
                return
            self.pipelines = {p.pipeline_id: p for p in reads.pipelines(conn)}
            self.schedules.load(conn, list(self.pipelines.values()))
        if self.version != -1:
            log.info("metadata changed (version %s): pipelines, graphs and schedules reloaded", version)
        self.version = version
        self.graphs.clear()
        self.broken.clear()

    def graph(self, pipeline: PipelineRow) -> Graph | None:
        """The pipeline's graph, or None while its metadata is broken."""
        self.load_graphs([pipeline])
        return self.graphs.get(pipeline.pipeline_id)

    def load_graphs(self, pipelines: list[PipelineRow]) -> None:
        """Load the graphs not yet in memory, all from the same few queries; remember the broken ones."""
        missing = [p for p in pipelines if p.pipeline_id not in self.graphs and p.pipeline_id not in self.broken]
        if not missing:
            return
        with self.db.read() as conn:
            found = load_graphs(conn, missing)
        for pipeline in missing:
            graph = found[pipeline.pipeline_id]
            if isinstance(graph, EtlCraftError):
                self.broken[pipeline.pipeline_id] = graph.message
                log.error("%s: its runs wait until the metadata is fixed: %s", pipeline.pipeline_code, graph.message)
            else:
                self.graphs[pipeline.pipeline_id] = graph
