-- 0008_chain: a work item carries how deep in a chain of agent-started
-- turns it is. A chat message, a scheduled task or an operator's inject
-- starts a chain (0); a delegate_group, escalate_group or inject_message
-- call from a turn of depth d queues depth d+1. The gateway refuses to run an item deeper
-- than limits.max_chain, so two groups that keep handing work to each
-- other stop instead of running (and spending) forever.
ALTER TABLE work ADD COLUMN chain INTEGER NOT NULL DEFAULT 0;
