-- The tickets this run changed in stg.alpha_tickets, except the ones the business rules reject
-- (published to dq.rejected_tickets by the task before this one), merged into the one fact table
-- of every client (SCD2: a changed ticket closes its active version and opens a new one).
SELECT
    s.ticket_key,
    s.client,
    s.source_ticket_id,
    s.customer_id,
    s.customer_tier,
    s.agent_id,
    s.agent_name,
    s.team,
    s.product_code,
    s.product_name,
    s.product_line,
    s.category_code,
    s.category_name,
    s.support_area,
    s.channel,
    s.priority,
    s.status,
    s.opened_at,
    s.resolved_at,
    s.resolution_hours,
    s.rating
FROM stg.alpha_tickets s
WHERE s.PIPELINE_RUN_ID = $$pipeline_run_id
  AND NOT EXISTS (SELECT 1 FROM dq.rejected_tickets r WHERE r.ticket_key = s.ticket_key)
