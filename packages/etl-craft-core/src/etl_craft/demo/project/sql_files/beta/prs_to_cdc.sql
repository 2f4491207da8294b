-- Change capture: the versions prs.beta_tickets opened in this run, i.e. what changed since the
-- last run. OVERWRITE_TABLE replaces the rows of cdc.beta_tickets on every run.
SELECT
    ticket_key,
    client,
    source_ticket_id,
    customer_id,
    customer_tier,
    agent_id,
    product_code,
    category_code,
    channel,
    priority,
    status,
    opened_at,
    resolved_at,
    rating,
    source_updated_at
FROM prs.beta_tickets
WHERE PIPELINE_RUN_ID = $$pipeline_run_id AND ACTIVE_FLAG = 'Y'
