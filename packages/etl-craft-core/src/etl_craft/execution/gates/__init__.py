"""Gates: judging a run's and a task's dependencies on other pipelines, and admitting runs and attempts through them."""
