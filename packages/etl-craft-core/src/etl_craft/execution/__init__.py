"""Graph, gates, the ready-set scheduler, the local provider, the task process, leases and reconcile."""
