-- The agents as delivered in seeds/agents.csv, merged into dim.agents by agent_id (SCD1: changed
-- agents are updated in place, new ones inserted).
SELECT agent_id, agent_name, team, hired_on
FROM ref.agents
