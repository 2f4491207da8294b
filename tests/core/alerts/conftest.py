"""Real services for the alert tests: an aiosmtpd relay with certificates made here, a webhook receiver."""

from tests.fixtures.relays import start_receiver, start_relay

__all__ = ["start_receiver", "start_relay"]
