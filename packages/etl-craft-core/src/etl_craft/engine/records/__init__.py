"""What etl-craft itself records beside the status changes: command requests, pauses, gate decisions
and waits, the lineage cache, alert deliveries and overseers. Each module owns its table's writes."""
