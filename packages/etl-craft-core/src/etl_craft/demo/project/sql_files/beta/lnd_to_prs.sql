-- Client Beta: the chat platform's ticket events landed by this run, in the shared ticket
-- vocabulary. Every event carries the whole ticket; the SCD2 merge into prs.beta_tickets keeps
-- the newest event of each ticket (MERGE_DEDUPE_ORDER: source_updated_at DESC).
SELECT
    'B-' || CAST(e.ticket_id AS VARCHAR) AS ticket_key,
    'BETA' AS client,
    CAST(e.ticket_id AS VARCHAR) AS source_ticket_id,
    NULLIF(TRIM(e.customer), '') AS customer_id,
    LOWER(e.tier) AS customer_tier,
    NULLIF(TRIM(e.agent), '') AS agent_id,
    e.sku AS product_code,
    UPPER(e.category) AS category_code,
    LOWER(e.channel) AS channel,
    CASE e.priority WHEN 1 THEN 'low' WHEN 2 THEN 'normal' WHEN 3 THEN 'high' WHEN 4 THEN 'urgent' END AS priority,
    LOWER(e.status) AS status,
    e.opened_at,
    e.resolved_at,
    e.rating,
    e.emitted_at AS source_updated_at
FROM lnd.beta_events e
WHERE e.PIPELINE_RUN_ID = $$pipeline_run_id
