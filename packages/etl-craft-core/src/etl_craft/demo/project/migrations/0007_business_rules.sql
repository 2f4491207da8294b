-- The business rules of the three clients: the same six rules on each client's staging table.
--
-- A rule is a SELECT that returns a row when the checked row, aliased t, breaks it. REJECT rules
-- (wave 1) keep a ticket out of dm.ticket_fact until a later delivery fixes it; REPORT rules
-- (wave 2) only list tickets for someone to look at. Flags are keyed on ticket_key, a stable
-- business key (stg rows keep their key; ROW_IDs of rebuilt tables would not).

INSERT INTO CFG_BUSINESS_RULES
    (PIPELINE_ID, TASK_ID, BUSINESS_RULE_NAME, BUSINESS_RULE_TYPE, SEQUENCE_NUMBER, TARGET_TABLE,
     BUSINESS_RULE_KEY_COLUMN, BUSINESS_RULE_SQL)
SELECT p.PIPELINE_ID, t.TASK_ID, r.column1, r.column2, r.column3, c.column3, 'ticket_key', r.column4
FROM (VALUES
    ('client_alpha', 'alpha_rules', 'stg.alpha_tickets'),
    ('client_beta', 'beta_rules', 'stg.beta_tickets'),
    ('client_gamma', 'gamma_rules', 'stg.gamma_tickets')) c
CROSS JOIN (VALUES
    ('missing_customer', 'REJECT', 1, 'SELECT 1 WHERE t.customer_id IS NULL'),
    ('unknown_agent', 'REJECT', 1, 'SELECT 1 WHERE t.agent_id IS NOT NULL AND t.agent_name IS NULL'),
    ('resolved_before_opened', 'REJECT', 1, 'SELECT 1 WHERE t.resolved_at < t.opened_at'),
    ('rating_out_of_range', 'REJECT', 1, 'SELECT 1 WHERE t.rating NOT BETWEEN 1 AND 5'),
    ('slow_resolution', 'REPORT', 2, 'SELECT 1 WHERE t.resolution_hours > 72'),
    ('unhappy_customer', 'REPORT', 2, 'SELECT 1 WHERE t.rating BETWEEN 1 AND 2')) r
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = c.column1 AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = c.column2 AND t.ACTIVE_FLAG = 'Y';
