"""`run`: the request and its modes (a whole run, one task, init and finalize steps, backfills, repairs)
and how a run is selected."""
