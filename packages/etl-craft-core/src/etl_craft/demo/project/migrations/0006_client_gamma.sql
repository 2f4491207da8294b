-- client_gamma: the client's source files into the one ticket fact table every client shares.
--
--   gamma_source_to_lnd    PYTHON          gamma_objects.py: new source records into lnd.gamma_rows
--   gamma_lnd_to_prs       SCD2_MERGE      prs.gamma_tickets: every version of every ticket (runs only when
--                                        the ingestion landed rows: HAS_DATA)
--   gamma_prs_to_cdc       OVERWRITE_TABLE cdc.gamma_tickets: the versions this run opened
--   gamma_cdc_to_stg       SCD1_MERGE      stg.gamma_tickets: the latest state, joined to the dimensions
--   gamma_rules            BUSINESS_RULES  REJECT and REPORT rules on stg.gamma_tickets (0007)
--   gamma_publish_rejects  PYTHON          the rejected tickets into dq.rejected_tickets
--   gamma_stg_to_fact      SCD2_MERGE      dm.ticket_fact, leaving the rejected tickets out
--   gamma_failure_alert    EMAIL_ALERT     after every other task (ALWAYS), sends only when the run failed

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT v.column1, v.column2, p.PIPELINE_ID, v.column3
FROM (VALUES
    ('gamma_source_to_lnd', 'INGESTION', 'PYTHON'),
    ('gamma_lnd_to_prs', 'ETL', 'SQL'),
    ('gamma_prs_to_cdc', 'ETL', 'SQL'),
    ('gamma_cdc_to_stg', 'ETL', 'SQL'),
    ('gamma_rules', 'ETL', 'BUSINESS_RULES'),
    ('gamma_publish_rejects', 'ETL', 'PYTHON'),
    ('gamma_stg_to_fact', 'ETL', 'SQL'),
    ('gamma_failure_alert', 'ETL', 'EMAIL_ALERT')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_gamma' AND p.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, v.column2, v.column3
FROM (VALUES
    ('gamma_source_to_lnd', 'SCRIPT_NAME', 'gamma_objects.py'),
    ('gamma_source_to_lnd', 'INPUT_PARAMS', '{"folder": "sources/gamma"}'),
    ('gamma_source_to_lnd', 'SOURCE_OBJECT', 'call centre CSV objects (sources/gamma)'),
    ('gamma_source_to_lnd', 'TARGET_OBJECT', 'lnd.gamma_rows'),
    ('gamma_source_to_lnd', 'DOCUMENTATION', 'Lands the rows of every object whose key sorts after the stored TEXT offset (the last key landed).'),
    ('gamma_lnd_to_prs', 'SQL_ACTION', 'SCD2_MERGE'),
    ('gamma_lnd_to_prs', 'TARGET_OBJECT', 'prs.gamma_tickets'),
    ('gamma_lnd_to_prs', 'SOURCE_SQL_FILE', 'gamma/lnd_to_prs.sql'),
    ('gamma_lnd_to_prs', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('gamma_lnd_to_prs', 'MERGE_KEY', 'ticket_key'),
    ('gamma_lnd_to_prs', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|product_code|category_code|channel|priority|status|opened_at|resolved_at|rating|source_updated_at'),
    ('gamma_lnd_to_prs', 'MERGE_DEDUPE_ORDER', 'source_updated_at DESC'),
    ('gamma_prs_to_cdc', 'SQL_ACTION', 'OVERWRITE_TABLE'),
    ('gamma_prs_to_cdc', 'TARGET_OBJECT', 'cdc.gamma_tickets'),
    ('gamma_prs_to_cdc', 'SOURCE_SQL_FILE', 'gamma/prs_to_cdc.sql'),
    ('gamma_prs_to_cdc', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('gamma_cdc_to_stg', 'SQL_ACTION', 'SCD1_MERGE'),
    ('gamma_cdc_to_stg', 'TARGET_OBJECT', 'stg.gamma_tickets'),
    ('gamma_cdc_to_stg', 'SOURCE_SQL_FILE', 'gamma/cdc_to_stg.sql'),
    ('gamma_cdc_to_stg', 'MERGE_KEY', 'ticket_key'),
    ('gamma_cdc_to_stg', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|agent_name|team|product_code|product_name|product_line|category_code|category_name|support_area|channel|priority|status|opened_at|resolved_at|resolution_hours|rating|source_updated_at'),
    ('gamma_publish_rejects', 'SCRIPT_NAME', 'publish_rejects.py'),
    ('gamma_publish_rejects', 'INPUT_PARAMS', '{"checked_table": "stg.gamma_tickets"}'),
    ('gamma_publish_rejects', 'SOURCE_OBJECT', 'Engine DB: AUD_BUSINESS_RULES_RESULTS'),
    ('gamma_publish_rejects', 'TARGET_OBJECT', 'dq.rejected_tickets'),
    ('gamma_stg_to_fact', 'SQL_ACTION', 'SCD2_MERGE'),
    ('gamma_stg_to_fact', 'TARGET_OBJECT', 'dm.ticket_fact'),
    ('gamma_stg_to_fact', 'SOURCE_SQL_FILE', 'gamma/stg_to_fact.sql'),
    ('gamma_stg_to_fact', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('gamma_stg_to_fact', 'MERGE_KEY', 'ticket_key'),
    ('gamma_stg_to_fact', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|agent_name|team|product_code|product_name|product_line|category_code|category_name|support_area|channel|priority|status|opened_at|resolved_at|resolution_hours|rating'),
    ('gamma_failure_alert', 'EMAIL_TO', 'support-data@example.com|oncall@example.com'),
    ('gamma_failure_alert', 'EMAIL_ON_STATUS', 'FAILED'),
    ('gamma_failure_alert', 'EMAIL_SUBJECT', '[support insights] $$pipeline_code ended $$status'),
    ('gamma_failure_alert', 'EMAIL_BODY',
     'Run $$pipeline_id of $$pipeline_code ended $$status.

$$error_message

Look at it with: etl-craft status --pipeline_code $$pipeline_code --run-id $$pipeline_id')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_gamma' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y';

-- Each step after the ingestion needs the one before it; the persisted layer runs only when the
-- ingestion landed something. The alert waits for every other task, whatever their ending.
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, v.column3
FROM (VALUES
    ('gamma_lnd_to_prs', 'gamma_source_to_lnd', 'HAS_DATA'),
    ('gamma_prs_to_cdc', 'gamma_lnd_to_prs', 'SUCCESS'),
    ('gamma_cdc_to_stg', 'gamma_prs_to_cdc', 'SUCCESS'),
    ('gamma_rules', 'gamma_cdc_to_stg', 'SUCCESS'),
    ('gamma_publish_rejects', 'gamma_rules', 'SUCCESS'),
    ('gamma_stg_to_fact', 'gamma_publish_rejects', 'SUCCESS'),
    ('gamma_failure_alert', 'gamma_source_to_lnd', 'ALWAYS'),
    ('gamma_failure_alert', 'gamma_lnd_to_prs', 'ALWAYS'),
    ('gamma_failure_alert', 'gamma_prs_to_cdc', 'ALWAYS'),
    ('gamma_failure_alert', 'gamma_cdc_to_stg', 'ALWAYS'),
    ('gamma_failure_alert', 'gamma_rules', 'ALWAYS'),
    ('gamma_failure_alert', 'gamma_publish_rejects', 'ALWAYS'),
    ('gamma_failure_alert', 'gamma_stg_to_fact', 'ALWAYS')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_gamma' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = v.column2 AND u.ACTIVE_FLAG = 'Y';
