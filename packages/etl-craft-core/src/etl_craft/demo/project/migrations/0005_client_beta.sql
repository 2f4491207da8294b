-- client_beta: the client's source files into the one ticket fact table every client shares.
--
--   beta_source_to_lnd    PYTHON          beta_events.py: new source records into lnd.beta_events
--   beta_lnd_to_prs       SCD2_MERGE      prs.beta_tickets: every version of every ticket (runs only when
--                                        the ingestion landed rows: HAS_DATA)
--   beta_prs_to_cdc       OVERWRITE_TABLE cdc.beta_tickets: the versions this run opened
--   beta_cdc_to_stg       SCD1_MERGE      stg.beta_tickets: the latest state, joined to the dimensions
--   beta_rules            BUSINESS_RULES  REJECT and REPORT rules on stg.beta_tickets (0007)
--   beta_publish_rejects  PYTHON          the rejected tickets into dq.rejected_tickets
--   beta_stg_to_fact      SCD2_MERGE      dm.ticket_fact, leaving the rejected tickets out
--   beta_failure_alert    EMAIL_ALERT     after every other task (ALWAYS), sends only when the run failed

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT v.column1, v.column2, p.PIPELINE_ID, v.column3
FROM (VALUES
    ('beta_source_to_lnd', 'INGESTION', 'PYTHON'),
    ('beta_lnd_to_prs', 'ETL', 'SQL'),
    ('beta_prs_to_cdc', 'ETL', 'SQL'),
    ('beta_cdc_to_stg', 'ETL', 'SQL'),
    ('beta_rules', 'ETL', 'BUSINESS_RULES'),
    ('beta_publish_rejects', 'ETL', 'PYTHON'),
    ('beta_stg_to_fact', 'ETL', 'SQL'),
    ('beta_failure_alert', 'ETL', 'EMAIL_ALERT')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_beta' AND p.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, v.column2, v.column3
FROM (VALUES
    ('beta_source_to_lnd', 'SCRIPT_NAME', 'beta_events.py'),
    ('beta_source_to_lnd', 'INPUT_PARAMS', '{"folder": "sources/beta"}'),
    ('beta_source_to_lnd', 'SOURCE_OBJECT', 'chat platform event log (sources/beta)'),
    ('beta_source_to_lnd', 'TARGET_OBJECT', 'lnd.beta_events'),
    ('beta_source_to_lnd', 'DOCUMENTATION', 'Lands the ticket events after the stored NUMBER offset (the last event position landed).'),
    ('beta_lnd_to_prs', 'SQL_ACTION', 'SCD2_MERGE'),
    ('beta_lnd_to_prs', 'TARGET_OBJECT', 'prs.beta_tickets'),
    ('beta_lnd_to_prs', 'SOURCE_SQL_FILE', 'beta/lnd_to_prs.sql'),
    ('beta_lnd_to_prs', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('beta_lnd_to_prs', 'MERGE_KEY', 'ticket_key'),
    ('beta_lnd_to_prs', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|product_code|category_code|channel|priority|status|opened_at|resolved_at|rating|source_updated_at'),
    ('beta_lnd_to_prs', 'MERGE_DEDUPE_ORDER', 'source_updated_at DESC'),
    ('beta_prs_to_cdc', 'SQL_ACTION', 'OVERWRITE_TABLE'),
    ('beta_prs_to_cdc', 'TARGET_OBJECT', 'cdc.beta_tickets'),
    ('beta_prs_to_cdc', 'SOURCE_SQL_FILE', 'beta/prs_to_cdc.sql'),
    ('beta_prs_to_cdc', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('beta_cdc_to_stg', 'SQL_ACTION', 'SCD1_MERGE'),
    ('beta_cdc_to_stg', 'TARGET_OBJECT', 'stg.beta_tickets'),
    ('beta_cdc_to_stg', 'SOURCE_SQL_FILE', 'beta/cdc_to_stg.sql'),
    ('beta_cdc_to_stg', 'MERGE_KEY', 'ticket_key'),
    ('beta_cdc_to_stg', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|agent_name|team|product_code|product_name|product_line|category_code|category_name|support_area|channel|priority|status|opened_at|resolved_at|resolution_hours|rating|source_updated_at'),
    ('beta_publish_rejects', 'SCRIPT_NAME', 'publish_rejects.py'),
    ('beta_publish_rejects', 'INPUT_PARAMS', '{"checked_table": "stg.beta_tickets"}'),
    ('beta_publish_rejects', 'SOURCE_OBJECT', 'Engine DB: AUD_BUSINESS_RULES_RESULTS'),
    ('beta_publish_rejects', 'TARGET_OBJECT', 'dq.rejected_tickets'),
    ('beta_stg_to_fact', 'SQL_ACTION', 'SCD2_MERGE'),
    ('beta_stg_to_fact', 'TARGET_OBJECT', 'dm.ticket_fact'),
    ('beta_stg_to_fact', 'SOURCE_SQL_FILE', 'beta/stg_to_fact.sql'),
    ('beta_stg_to_fact', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('beta_stg_to_fact', 'MERGE_KEY', 'ticket_key'),
    ('beta_stg_to_fact', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|agent_name|team|product_code|product_name|product_line|category_code|category_name|support_area|channel|priority|status|opened_at|resolved_at|resolution_hours|rating'),
    ('beta_failure_alert', 'EMAIL_TO', 'support-data@example.com|oncall@example.com'),
    ('beta_failure_alert', 'EMAIL_ON_STATUS', 'FAILED'),
    ('beta_failure_alert', 'EMAIL_SUBJECT', '[support insights] $$pipeline_code ended $$status'),
    ('beta_failure_alert', 'EMAIL_BODY',
     'Run $$pipeline_id of $$pipeline_code ended $$status.

$$error_message

Look at it with: etl-craft status --pipeline_code $$pipeline_code --run-id $$pipeline_id')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_beta' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y';

-- Each step after the ingestion needs the one before it; the persisted layer runs only when the
-- ingestion landed something. The alert waits for every other task, whatever their ending.
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, v.column3
FROM (VALUES
    ('beta_lnd_to_prs', 'beta_source_to_lnd', 'HAS_DATA'),
    ('beta_prs_to_cdc', 'beta_lnd_to_prs', 'SUCCESS'),
    ('beta_cdc_to_stg', 'beta_prs_to_cdc', 'SUCCESS'),
    ('beta_rules', 'beta_cdc_to_stg', 'SUCCESS'),
    ('beta_publish_rejects', 'beta_rules', 'SUCCESS'),
    ('beta_stg_to_fact', 'beta_publish_rejects', 'SUCCESS'),
    ('beta_failure_alert', 'beta_source_to_lnd', 'ALWAYS'),
    ('beta_failure_alert', 'beta_lnd_to_prs', 'ALWAYS'),
    ('beta_failure_alert', 'beta_prs_to_cdc', 'ALWAYS'),
    ('beta_failure_alert', 'beta_cdc_to_stg', 'ALWAYS'),
    ('beta_failure_alert', 'beta_rules', 'ALWAYS'),
    ('beta_failure_alert', 'beta_publish_rejects', 'ALWAYS'),
    ('beta_failure_alert', 'beta_stg_to_fact', 'ALWAYS')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_beta' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = v.column2 AND u.ACTIVE_FLAG = 'Y';
