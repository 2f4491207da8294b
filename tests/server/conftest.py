"""The webhook receiver of the alert tests, for the server's own announcements."""

from tests.fixtures.relays import start_receiver

__all__ = ["start_receiver"]
