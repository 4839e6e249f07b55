-- 0018_mid_turn: a group's agent.mid_turn (queue | steer | interrupt): what
-- a message that arrives while the group's turn runs in its chat does.
-- '' takes the configured agent.mid_turn.
ALTER TABLE groups ADD COLUMN mid_turn TEXT NOT NULL DEFAULT '';
