-- Client Alpha: the CRM documents landed by this run, in the shared ticket vocabulary.
-- The SCD2 merge into prs.alpha_tickets keeps the newest document of each ticket
-- (MERGE_DEDUPE_ORDER: source_updated_at DESC) and opens a new version only when it changed.
SELECT
    d.doc_id AS ticket_key,
    'ALPHA' AS client,
    d.doc_id AS source_ticket_id,
    NULLIF(TRIM(d.customer_id), '') AS customer_id,
    LOWER(d.customer_tier) AS customer_tier,
    NULLIF(TRIM(d.assignee), '') AS agent_id,
    d.product AS product_code,
    UPPER(d.topic) AS category_code,
    LOWER(d.channel) AS channel,
    LOWER(d.priority) AS priority,
    LOWER(d.state) AS status,
    d.opened_at,
    d.resolved_at,
    d.csat AS rating,
    d.updated_at AS source_updated_at
FROM lnd.alpha_documents d
WHERE d.PIPELINE_RUN_ID = $$pipeline_run_id
