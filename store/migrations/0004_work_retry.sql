-- 0004_work_retry: a failed batch waits for its retry without holding up
-- the folder's other chats. Its work rows carry the time before which the
-- batch's chat and topic are not picked again; other chats run meanwhile.
ALTER TABLE work ADD COLUMN not_before_ms INTEGER NOT NULL DEFAULT 0;
CREATE INDEX work_deferred ON work (folder, chat_jid, topic) WHERE not_before_ms > 0;
