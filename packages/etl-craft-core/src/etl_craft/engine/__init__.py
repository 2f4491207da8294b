"""The Engine DB: dialects, schema, migrations, locks, transitions and reads."""
