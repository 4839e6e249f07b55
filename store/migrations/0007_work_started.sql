-- 0007_work_started: a batch's work rows carry when its turn started, so a
-- restart after a crash mid-turn counts that attempt (a turn must not run
-- more than three times because the gateway kept dying under it).
ALTER TABLE work ADD COLUMN started_ms INTEGER NOT NULL DEFAULT 0;
