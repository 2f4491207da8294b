-- support_setup: one SETUP_TABLE task per table of the dim, prs, cdc, stg and dm layers.
--
-- A SETUP_TABLE task creates its target, empty, from the shape of the query that will fill it (the
-- same SQL file as the writer, in another pipeline) plus the engine columns of the writer's action
-- (SETUP_FOR), and leaves an existing table alone. The ref and lnd tables come from warehouse.sql.
-- A table is set up after the tables its query reads.

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT v.column1, 'ETL', p.PIPELINE_ID, 'SQL'
FROM (VALUES
    ('setup_dim_agents'),
    ('setup_dim_products'),
    ('setup_dim_categories'),
    ('setup_alpha_prs'),
    ('setup_alpha_cdc'),
    ('setup_alpha_stg'),
    ('setup_beta_prs'),
    ('setup_beta_cdc'),
    ('setup_beta_stg'),
    ('setup_gamma_prs'),
    ('setup_gamma_cdc'),
    ('setup_gamma_stg'),
    ('setup_ticket_fact')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'support_setup' AND p.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, v.column2, v.column3
FROM (VALUES
    ('setup_dim_agents', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_dim_agents', 'TARGET_OBJECT', 'dim.agents'),
    ('setup_dim_agents', 'SOURCE_SQL_FILE', 'reference/agents.sql'),
    ('setup_dim_agents', 'SETUP_FOR', 'SCD1_MERGE'),
    ('setup_dim_products', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_dim_products', 'TARGET_OBJECT', 'dim.products'),
    ('setup_dim_products', 'SOURCE_SQL_FILE', 'reference/products.sql'),
    ('setup_dim_products', 'SETUP_FOR', 'SCD1_MERGE'),
    ('setup_dim_categories', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_dim_categories', 'TARGET_OBJECT', 'dim.categories'),
    ('setup_dim_categories', 'SOURCE_SQL_FILE', 'reference/categories.sql'),
    ('setup_dim_categories', 'SETUP_FOR', 'SCD1_MERGE'),
    ('setup_alpha_prs', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_alpha_prs', 'TARGET_OBJECT', 'prs.alpha_tickets'),
    ('setup_alpha_prs', 'SOURCE_SQL_FILE', 'alpha/lnd_to_prs.sql'),
    ('setup_alpha_prs', 'SETUP_FOR', 'SCD2_MERGE'),
    ('setup_alpha_prs', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('setup_alpha_cdc', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_alpha_cdc', 'TARGET_OBJECT', 'cdc.alpha_tickets'),
    ('setup_alpha_cdc', 'SOURCE_SQL_FILE', 'alpha/prs_to_cdc.sql'),
    ('setup_alpha_cdc', 'SETUP_FOR', 'OVERWRITE_TABLE'),
    ('setup_alpha_cdc', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('setup_alpha_stg', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_alpha_stg', 'TARGET_OBJECT', 'stg.alpha_tickets'),
    ('setup_alpha_stg', 'SOURCE_SQL_FILE', 'alpha/cdc_to_stg.sql'),
    ('setup_alpha_stg', 'SETUP_FOR', 'SCD1_MERGE'),
    ('setup_beta_prs', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_beta_prs', 'TARGET_OBJECT', 'prs.beta_tickets'),
    ('setup_beta_prs', 'SOURCE_SQL_FILE', 'beta/lnd_to_prs.sql'),
    ('setup_beta_prs', 'SETUP_FOR', 'SCD2_MERGE'),
    ('setup_beta_prs', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('setup_beta_cdc', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_beta_cdc', 'TARGET_OBJECT', 'cdc.beta_tickets'),
    ('setup_beta_cdc', 'SOURCE_SQL_FILE', 'beta/prs_to_cdc.sql'),
    ('setup_beta_cdc', 'SETUP_FOR', 'OVERWRITE_TABLE'),
    ('setup_beta_cdc', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('setup_beta_stg', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_beta_stg', 'TARGET_OBJECT', 'stg.beta_tickets'),
    ('setup_beta_stg', 'SOURCE_SQL_FILE', 'beta/cdc_to_stg.sql'),
    ('setup_beta_stg', 'SETUP_FOR', 'SCD1_MERGE'),
    ('setup_gamma_prs', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_gamma_prs', 'TARGET_OBJECT', 'prs.gamma_tickets'),
    ('setup_gamma_prs', 'SOURCE_SQL_FILE', 'gamma/lnd_to_prs.sql'),
    ('setup_gamma_prs', 'SETUP_FOR', 'SCD2_MERGE'),
    ('setup_gamma_prs', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('setup_gamma_cdc', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_gamma_cdc', 'TARGET_OBJECT', 'cdc.gamma_tickets'),
    ('setup_gamma_cdc', 'SOURCE_SQL_FILE', 'gamma/prs_to_cdc.sql'),
    ('setup_gamma_cdc', 'SETUP_FOR', 'OVERWRITE_TABLE'),
    ('setup_gamma_cdc', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true'),
    ('setup_gamma_stg', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_gamma_stg', 'TARGET_OBJECT', 'stg.gamma_tickets'),
    ('setup_gamma_stg', 'SOURCE_SQL_FILE', 'gamma/cdc_to_stg.sql'),
    ('setup_gamma_stg', 'SETUP_FOR', 'SCD1_MERGE'),
    ('setup_ticket_fact', 'SQL_ACTION', 'SETUP_TABLE'),
    ('setup_ticket_fact', 'TARGET_OBJECT', 'dm.ticket_fact'),
    ('setup_ticket_fact', 'SOURCE_SQL_FILE', 'alpha/stg_to_fact.sql'),
    ('setup_ticket_fact', 'SETUP_FOR', 'SCD2_MERGE'),
    ('setup_ticket_fact', 'PIPELINE_RUN_ID_SUBSTITUTION', 'true')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'support_setup' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y';

-- A query reads the tables set up before it: cdc reads prs, stg reads cdc and the dimensions, and
-- the fact's query reads stg (and dq.rejected_tickets, from warehouse.sql).
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, 'SUCCESS'
FROM (VALUES
    ('setup_alpha_cdc', 'setup_alpha_prs'),
    ('setup_alpha_stg', 'setup_alpha_cdc'),
    ('setup_alpha_stg', 'setup_dim_agents'),
    ('setup_alpha_stg', 'setup_dim_products'),
    ('setup_alpha_stg', 'setup_dim_categories'),
    ('setup_beta_cdc', 'setup_beta_prs'),
    ('setup_beta_stg', 'setup_beta_cdc'),
    ('setup_beta_stg', 'setup_dim_agents'),
    ('setup_beta_stg', 'setup_dim_products'),
    ('setup_beta_stg', 'setup_dim_categories'),
    ('setup_gamma_cdc', 'setup_gamma_prs'),
    ('setup_gamma_stg', 'setup_gamma_cdc'),
    ('setup_gamma_stg', 'setup_dim_agents'),
    ('setup_gamma_stg', 'setup_dim_products'),
    ('setup_gamma_stg', 'setup_dim_categories'),
    ('setup_ticket_fact', 'setup_alpha_stg')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'support_setup' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = v.column2 AND u.ACTIVE_FLAG = 'Y';
