"""The web UI: server-rendered Jinja2 pages under /ui/, built from the same service calls as API v1."""
