"""Who may use the HTTP API: bearer tokens (CFG_API_TOKENS) and their roles."""
