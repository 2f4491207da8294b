from __future__ import annotations

from etl_craft.cli.main import main

raise SystemExit(main())
