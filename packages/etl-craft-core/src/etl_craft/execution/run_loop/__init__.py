"""The run loop: one run supervised in the foreground (ready-set dispatch, attempts, leases, retries,
timeouts, signals, ending), and reconciliation of work nobody vouches for."""
