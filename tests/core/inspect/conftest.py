"""One project per dialect for the whole folder: the inspection commands only read, so a single set of
real runs (tests/core/inspect/scenario.py) serves every test here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from etl_craft.engine.schema import migrations
from tests.core.inspect import scenario
from tests.core.inspect.scene import Scene
from tests.fixtures import postgres as pg
from tests.fixtures.project import DIALECTS, Project


@pytest.fixture(scope="package", params=DIALECTS)
def scene_project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """An initialised Engine DB on one dialect, kept for every test of the folder."""
    root = tmp_path_factory.mktemp(f"inspect-{request.param}")
    if request.param == "postgresql":
        template = request.getfixturevalue("pg_template")
        with pg.throwaway_database(template=template) as name:
            project = Project(root, "postgresql", name)
            project.write_config()
            yield project
            project.close()
    else:
        project = Project(root, "sqlite")
        project.write_config()
        migrations.init_db(project.open_db(create=True))
        yield project
        project.close()


@pytest.fixture(scope="package")
def scene(scene_project: Project) -> Scene:
    scene = Scene(scene_project)
    scenario.build(scene)
    return scene
