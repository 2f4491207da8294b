"""Tools-only generators of the Engine DB schema files and their reference page (not shipped in the wheel)."""
