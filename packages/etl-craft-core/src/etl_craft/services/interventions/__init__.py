"""Operator interventions: cancel and reopen, mark (with stand-in runs), pause and resume, and
reconciliation of work nobody vouches for."""
