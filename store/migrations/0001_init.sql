-- 0001_init: the initial schema.
-- Times are integer unix milliseconds (UTC). messages.seq is the cursor.

-- A message's identity is (chat_jid, msg_id): platform ids are unique per
-- chat only, so msg_id alone must never be a key.
CREATE TABLE messages (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_jid    TEXT    NOT NULL,
    msg_id      TEXT    NOT NULL,
    sender      TEXT    NOT NULL DEFAULT '',
    sender_name TEXT    NOT NULL DEFAULT '',
    text        TEXT    NOT NULL DEFAULT '',
    topic       TEXT    NOT NULL DEFAULT '',
    reply_to    TEXT    NOT NULL DEFAULT '',
    verb        TEXT    NOT NULL DEFAULT '',
    from_bot    INTEGER NOT NULL DEFAULT 0,
    time_ms     INTEGER NOT NULL,
    attachments TEXT,   -- JSON array of adapters.Attachment; NULL when none
    created_ms  INTEGER NOT NULL,
    UNIQUE (chat_jid, msg_id)
);
CREATE INDEX messages_chat_seq ON messages (chat_jid, seq);
CREATE INDEX messages_chat_topic_seq ON messages (chat_jid, topic, seq);

-- Full-text index over messages.text, an external-content table kept in step
-- by triggers; snippet() reads the text back from messages.
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text,
    content = 'messages',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.seq, new.text);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
    INSERT INTO messages_fts (rowid, text) VALUES (new.seq, new.text);
END;

CREATE TABLE chats (
    jid           TEXT    PRIMARY KEY,
    platform      TEXT    NOT NULL DEFAULT '',
    name          TEXT    NOT NULL DEFAULT '',
    first_seen_ms INTEGER NOT NULL,
    last_seq      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE groups (
    folder     TEXT    PRIMARY KEY,
    created_ms INTEGER NOT NULL
);

CREATE TABLE routes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    seq        INTEGER NOT NULL DEFAULT 0,
    match      TEXT    NOT NULL DEFAULT '{}', -- JSON object: key -> glob
    target     TEXT    NOT NULL,
    mode       TEXT    NOT NULL DEFAULT 'trigger',
    created_ms INTEGER NOT NULL
);
CREATE INDEX routes_order ON routes (seq, id);

CREATE TABLE grant_overrides (
    folder   TEXT    NOT NULL,
    position INTEGER NOT NULL,
    rule     TEXT    NOT NULL,
    PRIMARY KEY (folder, position)
);

-- revision counts changes to the configuration tables (groups, routes,
-- grant_overrides), whoever makes them: a running gateway polls it to pick up
-- changes made by the CLI. Message traffic does not touch it.
CREATE TABLE revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO revision (id, n) VALUES (1, 0);

CREATE TRIGGER groups_rev_insert AFTER INSERT ON groups BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER groups_rev_update AFTER UPDATE ON groups BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER groups_rev_delete AFTER DELETE ON groups BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER routes_rev_insert AFTER INSERT ON routes BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER routes_rev_update AFTER UPDATE ON routes BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER routes_rev_delete AFTER DELETE ON routes BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER grant_overrides_rev_insert AFTER INSERT ON grant_overrides BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER grant_overrides_rev_update AFTER UPDATE ON grant_overrides BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER grant_overrides_rev_delete AFTER DELETE ON grant_overrides BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
