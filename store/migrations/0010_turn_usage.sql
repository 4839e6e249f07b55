-- 0010_turn_usage: what a turn cost, as its agent reported it (Claude Code's
-- JSON, a text agent's usage trailer, the MCP tool report_usage).
-- session_cost_usd is Claude Code's total_cost_usd as printed: cumulative
-- over a resumed session, so a turn's cost_usd is the difference to the
-- session's previous turn.
ALTER TABLE turns ADD COLUMN cost_usd              REAL    NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN input_tokens          INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN output_tokens         INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN cache_creation_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN cache_read_tokens     INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN num_turns             INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN api_ms                INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN session_cost_usd      REAL    NOT NULL DEFAULT 0;
-- Spend per window over all folders (the status page's chart).
CREATE INDEX turns_started ON turns (started_ms);
