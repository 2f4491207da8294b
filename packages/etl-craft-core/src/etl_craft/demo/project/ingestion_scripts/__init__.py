"""The demo project etl-craft demo writes out: package markers only, so the import contract and the
type checker cover its ingestion scripts (a project needs no __init__.py; the demo copies none)."""
