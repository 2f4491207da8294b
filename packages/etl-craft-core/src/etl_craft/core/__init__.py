"""Errors and exit codes, enums, the actor, time and text helpers, fault points."""
