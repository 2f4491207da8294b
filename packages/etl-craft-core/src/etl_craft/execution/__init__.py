"""Graph, gates, the ready-set rules of the run loop, the local provider, the task process, leases and reconcile."""
