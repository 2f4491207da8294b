-- etl-craft ENGINE migration 0007 (PostgreSQL): the indexes retention (etl-craft purge, S6.A) needs to find old
-- rows and to check, row by row, that nothing retained still references them.

CREATE INDEX ix_pipeline_run_started ON AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE);
CREATE INDEX ix_interventions_requested ON AUD_RUN_INTERVENTIONS (REQUESTED_AT);
CREATE INDEX ix_business_rule_run_task_run ON AUD_BUSINESS_RULES_RUN_LOG (TASK_RUN_ID);
CREATE INDEX ix_business_rule_results_run ON AUD_BUSINESS_RULES_RESULTS (BUSINESS_RULE_RUN_ID);
CREATE INDEX ix_consumption_run ON AUD_DEPENDENCY_CONSUMPTION (PIPELINE_RUN_ID);
CREATE INDEX ix_consumption_consumed_run ON AUD_DEPENDENCY_CONSUMPTION (CONSUMED_PIPELINE_RUN_ID);
CREATE INDEX ix_consumption_consumed_at ON AUD_DEPENDENCY_CONSUMPTION (CONSUMED_AT);
CREATE INDEX ix_gate_decisions_attempt ON AUD_GATE_DECISIONS (ATTEMPT_ID);
CREATE INDEX ix_gate_decisions_selected_run ON AUD_GATE_DECISIONS (SELECTED_PIPELINE_RUN_ID);
CREATE INDEX ix_gate_decisions_selected_task_run ON AUD_GATE_DECISIONS (SELECTED_TASK_RUN_ID);
CREATE INDEX ix_actions_run ON AUD_ACTIONS (PIPELINE_RUN_ID);
CREATE INDEX ix_alert_deliveries_attempt ON AUD_ALERT_DELIVERIES (ATTEMPT_ID);
