"""Alert channels: telling webhooks (and Slack) about failed runs, SLA breaches, lost attempts and long gate waits."""
