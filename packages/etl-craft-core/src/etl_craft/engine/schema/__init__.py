"""The Engine DB's schema: its tables described once, the packaged SQL and migrations, and the rules a
project migration's statements must keep."""
