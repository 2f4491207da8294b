// etl-craft web UI: progressive enhancement only; every page works without this script.
"use strict";
