-- 0013_cost_micros: a turn's cost in whole micro-dollars (INTEGER) instead
-- of REAL dollars, so that sums are exact: three turns of $0.80 sum to
-- 2400000, read as 2.4, not 2.4000000000000004. Existing costs convert to
-- the nearest micro-dollar (what agents print has at most that precision);
-- a cost the usage check refuses now (negative, not finite, over $10,000
-- for one turn: agent.MaxTurnCostUSD) converts to 0, as it would have been
-- recorded: one such row made every sum +Inf.
ALTER TABLE turns ADD COLUMN cost_micros         INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN session_cost_micros INTEGER NOT NULL DEFAULT 0;
UPDATE turns SET
    cost_micros = CASE WHEN cost_usd BETWEEN 0 AND 10000 THEN CAST(ROUND(cost_usd * 1000000) AS INTEGER) ELSE 0 END,
    session_cost_micros = CASE WHEN session_cost_usd BETWEEN 0 AND 10000 THEN CAST(ROUND(session_cost_usd * 1000000) AS INTEGER) ELSE 0 END;
DROP INDEX turns_spend;
ALTER TABLE turns DROP COLUMN cost_usd;
ALTER TABLE turns DROP COLUMN session_cost_usd;
-- Budget checks sum a subtree's cost over a window from the index alone.
CREATE INDEX turns_spend ON turns (folder, started_ms, cost_micros);
