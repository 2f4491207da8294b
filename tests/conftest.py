"""Shared fixtures, loaded as plugins from tests/fixtures/."""

pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.project", "tests.fixtures.harness", "tests.fixtures.aws"]
