-- client_alpha: the client's source files into the one ticket fact table every client shares.
--
--   alpha_source_to_lnd    PYTHON          alpha_documents.py: new source records into lnd.alpha_documents
--   alpha_lnd_to_prs       SCD2_MERGE      prs.alpha_tickets: every version of every ticket (runs only when
--                                        the ingestion landed rows: HAS_DATA)
--   alpha_prs_to_cdc       OVERWRITE_TABLE cdc.alpha_tickets: the versions this run opened
--   alpha_cdc_to_stg       SCD1_MERGE      stg.alpha_tickets: the latest state, joined to the dimensions
--   alpha_rules            BUSINESS_RULES  REJECT and REPORT rules on stg.alpha_tickets (0007)
--   alpha_publish_rejects  PYTHON          the rejected tickets into dq.rejected_tickets
--   alpha_stg_to_fact      SCD2_MERGE      dm.ticket_fact, leaving the rejected tickets out
--   alpha_failure_alert    EMAIL_ALERT     after every other task (ALWAYS), sends only when the run failed

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT v.column1, v.column2, p.PIPELINE_ID, v.column3
FROM (VALUES
    ('alpha_source_to_lnd', 'INGESTION', 'PYTHON'),
    ('alpha_lnd_to_prs', 'ETL', 'SQL'),
    ('alpha_prs_to_cdc', 'ETL', 'SQL'),
    ('alpha_cdc_to_stg', 'ETL', 'SQL'),
    ('alpha_rules', 'ETL', 'BUSINESS_RULES'),
    ('alpha_publish_rejects', 'ETL', 'PYTHON'),
    ('alpha_stg_to_fact', 'ETL', 'SQL'),
    ('alpha_failure_alert', 'ETL', 'EMAIL_ALERT')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_alpha' AND p.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, v.column2, v.column3
FROM (VALUES
    ('alpha_source_to_lnd', 'SCRIPT_NAME', 'alpha_documents.py'),
    ('alpha_source_to_lnd', 'INPUT_PARAMS', '{"folder": "sources/alpha"}'),
    ('alpha_source_to_lnd', 'SOURCE_OBJECT', 'CRM JSON exports (sources/alpha)'),
    ('alpha_source_to_lnd', 'TARGET_OBJECT', 'lnd.alpha_documents'),
    ('alpha_source_to_lnd', 'DOCUMENTATION', 'Lands the CRM documents updated after the stored TIMESTAMP offset (the newest updated_at landed).'),
    ('alpha_lnd_to_prs', 'SQL_ACTION', 'SCD2_MERGE'),
    ('alpha_lnd_to_prs', 'TARGET_OBJECT', 'prs.alpha_tickets'),
    ('alpha_lnd_to_prs', 'SOURCE_SQL_FILE', 'alpha/lnd_to_prs.sql'),
    ('alpha_lnd_to_prs', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('alpha_lnd_to_prs', 'MERGE_KEY', 'ticket_key'),
    ('alpha_lnd_to_prs', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|product_code|category_code|channel|priority|status|opened_at|resolved_at|rating|source_updated_at'),
    ('alpha_lnd_to_prs', 'MERGE_DEDUPE_ORDER', 'source_updated_at DESC'),
    ('alpha_prs_to_cdc', 'SQL_ACTION', 'OVERWRITE_TABLE'),
    ('alpha_prs_to_cdc', 'TARGET_OBJECT', 'cdc.alpha_tickets'),
    ('alpha_prs_to_cdc', 'SOURCE_SQL_FILE', 'alpha/prs_to_cdc.sql'),
    ('alpha_prs_to_cdc', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('alpha_cdc_to_stg', 'SQL_ACTION', 'SCD1_MERGE'),
    ('alpha_cdc_to_stg', 'TARGET_OBJECT', 'stg.alpha_tickets'),
    ('alpha_cdc_to_stg', 'SOURCE_SQL_FILE', 'alpha/cdc_to_stg.sql'),
    ('alpha_cdc_to_stg', 'MERGE_KEY', 'ticket_key'),
    ('alpha_cdc_to_stg', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|agent_name|team|product_code|product_name|product_line|category_code|category_name|support_area|channel|priority|status|opened_at|resolved_at|resolution_hours|rating|source_updated_at'),
    ('alpha_publish_rejects', 'SCRIPT_NAME', 'publish_rejects.py'),
    ('alpha_publish_rejects', 'INPUT_PARAMS', '{"checked_table": "stg.alpha_tickets"}'),
    ('alpha_publish_rejects', 'SOURCE_OBJECT', 'Engine DB: AUD_BUSINESS_RULES_RESULTS'),
    ('alpha_publish_rejects', 'TARGET_OBJECT', 'dq.rejected_tickets'),
    ('alpha_stg_to_fact', 'SQL_ACTION', 'SCD2_MERGE'),
    ('alpha_stg_to_fact', 'TARGET_OBJECT', 'dm.ticket_fact'),
    ('alpha_stg_to_fact', 'SOURCE_SQL_FILE', 'alpha/stg_to_fact.sql'),
    ('alpha_stg_to_fact', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('alpha_stg_to_fact', 'MERGE_KEY', 'ticket_key'),
    ('alpha_stg_to_fact', 'MERGE_COMPARE_COLUMNS', 'client|source_ticket_id|customer_id|customer_tier|agent_id|agent_name|team|product_code|product_name|product_line|category_code|category_name|support_area|channel|priority|status|opened_at|resolved_at|resolution_hours|rating'),
    ('alpha_failure_alert', 'EMAIL_TO', 'support-data@example.com|oncall@example.com'),
    ('alpha_failure_alert', 'EMAIL_ON_STATUS', 'FAILED'),
    ('alpha_failure_alert', 'EMAIL_SUBJECT', '[support insights] $$pipeline_code ended $$status'),
    ('alpha_failure_alert', 'EMAIL_BODY',
     'Run $$pipeline_id of $$pipeline_code ended $$status.

$$error_message

Look at it with: etl-craft status --pipeline_code $$pipeline_code --run-id $$pipeline_id')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_alpha' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y';

-- Each step after the ingestion needs the one before it; the persisted layer runs only when the
-- ingestion landed something. The alert waits for every other task, whatever their ending.
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, v.column3
FROM (VALUES
    ('alpha_lnd_to_prs', 'alpha_source_to_lnd', 'HAS_DATA'),
    ('alpha_prs_to_cdc', 'alpha_lnd_to_prs', 'SUCCESS'),
    ('alpha_cdc_to_stg', 'alpha_prs_to_cdc', 'SUCCESS'),
    ('alpha_rules', 'alpha_cdc_to_stg', 'SUCCESS'),
    ('alpha_publish_rejects', 'alpha_rules', 'SUCCESS'),
    ('alpha_stg_to_fact', 'alpha_publish_rejects', 'SUCCESS'),
    ('alpha_failure_alert', 'alpha_source_to_lnd', 'ALWAYS'),
    ('alpha_failure_alert', 'alpha_lnd_to_prs', 'ALWAYS'),
    ('alpha_failure_alert', 'alpha_prs_to_cdc', 'ALWAYS'),
    ('alpha_failure_alert', 'alpha_cdc_to_stg', 'ALWAYS'),
    ('alpha_failure_alert', 'alpha_rules', 'ALWAYS'),
    ('alpha_failure_alert', 'alpha_publish_rejects', 'ALWAYS'),
    ('alpha_failure_alert', 'alpha_stg_to_fact', 'ALWAYS')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'client_alpha' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = v.column2 AND u.ACTIVE_FLAG = 'Y';
