-- Client Gamma: the call centre's CSV rows landed by this run, in the shared ticket vocabulary.
-- Priorities arrive as P1 (urgent) to P4 (low). The SCD2 merge into prs.gamma_tickets keeps the
-- newest row of each ticket (MERGE_DEDUPE_ORDER: source_updated_at DESC).
SELECT
    r.ticket_number AS ticket_key,
    'GAMMA' AS client,
    r.ticket_number AS source_ticket_id,
    NULLIF(TRIM(r.customer_ref), '') AS customer_id,
    LOWER(r.customer_tier) AS customer_tier,
    NULLIF(TRIM(r.agent_code), '') AS agent_id,
    r.product_sku AS product_code,
    UPPER(r.category) AS category_code,
    LOWER(r.channel) AS channel,
    CASE r.priority_level WHEN 'P1' THEN 'urgent' WHEN 'P2' THEN 'high' WHEN 'P3' THEN 'normal' WHEN 'P4' THEN 'low' END
        AS priority,
    LOWER(r.status) AS status,
    r.opened_local AS opened_at,
    r.closed_local AS resolved_at,
    r.satisfaction AS rating,
    r.last_modified_local AS source_updated_at
FROM lnd.gamma_rows r
WHERE r.PIPELINE_RUN_ID = $$pipeline_run_id
