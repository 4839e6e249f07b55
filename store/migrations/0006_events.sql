-- 0006_events: what real platforms send besides new messages, and what the
-- outbox needs to deliver to them.

-- Edits replace a message's text (the FTS update trigger follows), deletes
-- mark it, and other bots' messages are marked so they never start a turn.
ALTER TABLE messages ADD COLUMN deleted   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN other_bot INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN edited_ms INTEGER NOT NULL DEFAULT 0;

-- reactions: who reacted to which message with what. Redelivery is harmless.
CREATE TABLE reactions (
    chat_jid TEXT    NOT NULL,
    msg_id   TEXT    NOT NULL,
    sender   TEXT    NOT NULL,
    emoji    TEXT    NOT NULL,
    time_ms  INTEGER NOT NULL,
    PRIMARY KEY (chat_jid, msg_id, sender, emoji)
);

-- reaction_notes: reactions to the bot's messages, shown once in the owning
-- folder's next prompt (like notices), then deleted.
CREATE TABLE reaction_notes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    folder      TEXT    NOT NULL,
    chat_jid    TEXT    NOT NULL,
    msg_id      TEXT    NOT NULL,
    sender      TEXT    NOT NULL,
    sender_name TEXT    NOT NULL DEFAULT '',
    emoji       TEXT    NOT NULL,
    removed     INTEGER NOT NULL DEFAULT 0,
    time_ms     INTEGER NOT NULL
);
CREATE INDEX reaction_notes_folder ON reaction_notes (folder, id);

-- The outbox sends a long reply as ordered parts and remembers how far it
-- got, so a retry resumes at the next part; file rows carry the path (inside
-- the sending folder) opened at send time.
ALTER TABLE outbox ADD COLUMN parts_sent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN file_path  TEXT    NOT NULL DEFAULT '';
