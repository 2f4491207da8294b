"""Task processes: each attempt in its own process, started from a fork server, with its log, its
context for the handler, and the identity that lets its owner stop it."""
