"""The `etl-craft` command: argument parsing and rendering only."""
