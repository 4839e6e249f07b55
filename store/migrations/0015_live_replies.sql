-- 0015_live_replies: where each live reply shows on its platform while its
-- turn runs (a message sent and edited, a Slack stream), written when it
-- first shows and removed when it ends. A gateway killed mid-stream finds
-- the rows at its next start and cleans those messages up, so that no
-- half-written reply is left looking final.
CREATE TABLE live_replies (
    turn_id    TEXT    NOT NULL,
    part       INTEGER NOT NULL, -- 0 for the first message, 1 for the one it continues in, ...
    platform   TEXT    NOT NULL,
    chat_jid   TEXT    NOT NULL,
    topic      TEXT    NOT NULL DEFAULT '',
    message_id TEXT    NOT NULL,
    mode       TEXT    NOT NULL, -- adapters.LiveMode: edit or stream
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (turn_id, part)
);
