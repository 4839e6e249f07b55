-- 0022_work_runs: one work row may stand for a run of messages. A group
-- commit (EnqueueMessages) writes one row for consecutive new messages of
-- one chat and topic that create the same work (every column but seq):
-- seq is the run's first message and seq_end its last; every message of
-- the chat and topic with a seq in [seq, seq_end] belongs to the run (all
-- of them were stored in that one transaction). seq_end 0: the row stands
-- for seq alone, as every row written before. Readers expand a run into
-- one work item per message (messages_chat_topic_seq).
ALTER TABLE work ADD COLUMN seq_end INTEGER NOT NULL DEFAULT 0;
