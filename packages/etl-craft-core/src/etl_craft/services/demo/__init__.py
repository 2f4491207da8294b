"""`etl-craft demo`: the walkthrough that writes the demo project, sets it up and runs it, and its live events."""
