-- The changed tickets joined to the dimensions, merged into stg.gamma_tickets (SCD1: the latest
-- state of every ticket). A code the dimensions don't know joins to NULL names, which the
-- business rules report.
SELECT
    c.ticket_key,
    c.client,
    c.source_ticket_id,
    c.customer_id,
    c.customer_tier,
    c.agent_id,
    a.agent_name,
    a.team,
    c.product_code,
    p.product_name,
    p.product_line,
    c.category_code,
    g.category_name,
    g.support_area,
    c.channel,
    c.priority,
    c.status,
    c.opened_at,
    c.resolved_at,
    CAST(date_diff('minute', c.opened_at, c.resolved_at) / 60.0 AS DECIMAL(10, 2)) AS resolution_hours,
    c.rating,
    c.source_updated_at
FROM cdc.gamma_tickets c
LEFT JOIN dim.agents a ON a.agent_id = c.agent_id AND a.DELETE_FLAG = 'N'
LEFT JOIN dim.products p ON p.product_code = c.product_code AND p.DELETE_FLAG = 'N'
LEFT JOIN dim.categories g ON g.category_code = c.category_code AND g.DELETE_FLAG = 'N'
