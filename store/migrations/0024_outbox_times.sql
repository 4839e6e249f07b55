-- 0024_outbox_times: what a start reads of the outbox by time, found
-- without reading every reply ever sent (outbox rows are kept): the
-- chats an interrupted turn already answered through a tool
-- (OutboxChatsSince, by created_ms) and where the bot spoke within
-- engage_ttl (SpokenSince, by done_ms of what was sent).
CREATE INDEX outbox_created ON outbox (created_ms);
CREATE INDEX outbox_sent_done ON outbox (done_ms) WHERE status = 'sent';
