-- 0012_work_turn: a batch's work rows carry the id of the turn running them
-- (with started_ms), so a gateway restarted while a turn ran on a worker
-- machine can await that turn's outcome and record it instead of running
-- the batch again.
ALTER TABLE work ADD COLUMN turn_id TEXT NOT NULL DEFAULT '';
