-- 0025_work_task_queued: a task run's work row says whether it is a
-- missed run its policy runs (a catch-up) or an on-time one, and a task's
-- queued runs are found by an index of their own. An on-time slot that
-- falls due while the task's previous on-time run still waits to start is
-- not queued behind it (queueTaskSQL); cancelling or pausing a task drops
-- its queued runs (skipQueuedRuns). Message work (task_id 0) is not in the
-- index.
ALTER TABLE work ADD COLUMN missed INTEGER NOT NULL DEFAULT 0;
CREATE INDEX work_task ON work (task_id, started_ms) WHERE task_id > 0;
