-- 0002_queue: the turn queue, the outbox, sessions, turn records, notices.

-- work is what a folder still has to do: a routed message (trigger or
-- observe), an injected message, or a prompt (task, delegate, escalate).
-- It is written in the same transaction as the message it refers to.
CREATE TABLE work (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    folder     TEXT    NOT NULL,
    chat_jid   TEXT    NOT NULL,
    topic      TEXT    NOT NULL DEFAULT '',
    seq        INTEGER NOT NULL DEFAULT 0,  -- messages.seq; 0 for prompts
    mode       TEXT    NOT NULL,            -- trigger | observe
    trigger    TEXT    NOT NULL,            -- message | inject | task | delegate | escalate
    prompt     TEXT    NOT NULL DEFAULT '',
    origin     TEXT    NOT NULL DEFAULT '', -- delegating / escalating folder
    task_id    INTEGER NOT NULL DEFAULT 0,
    run_id     INTEGER NOT NULL DEFAULT 0,
    isolated   INTEGER NOT NULL DEFAULT 0,
    attempts   INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL
);
CREATE INDEX work_folder ON work (folder, mode, id);
CREATE INDEX work_key ON work (folder, chat_jid, topic, id);

-- outbox holds every reply before delivery; key makes a reply unique, and a
-- row moves pending -> sending -> sent | failed exactly once.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    key             TEXT    NOT NULL UNIQUE,
    kind            TEXT    NOT NULL DEFAULT 'send', -- send | reply | notice
    folder          TEXT    NOT NULL DEFAULT '',
    chat_jid        TEXT    NOT NULL,
    topic           TEXT    NOT NULL DEFAULT '',
    reply_to        TEXT    NOT NULL DEFAULT '',
    text            TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL DEFAULT 0,
    error           TEXT    NOT NULL DEFAULT '',
    platform_id     TEXT    NOT NULL DEFAULT '',
    created_ms      INTEGER NOT NULL,
    done_ms         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX outbox_due ON outbox (status, next_attempt_ms);
CREATE INDEX outbox_chat ON outbox (chat_jid, status, id);

CREATE TABLE sessions (
    folder     TEXT    NOT NULL,
    chat_jid   TEXT    NOT NULL,
    topic      TEXT    NOT NULL DEFAULT '',
    session_id TEXT    NOT NULL,
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (folder, chat_jid, topic)
);

CREATE TABLE turns (
    id          TEXT    PRIMARY KEY,
    folder      TEXT    NOT NULL,
    chat_jid    TEXT    NOT NULL,
    topic       TEXT    NOT NULL DEFAULT '',
    trigger     TEXT    NOT NULL,
    task_id     INTEGER NOT NULL DEFAULT 0,
    run_id      INTEGER NOT NULL DEFAULT 0,
    attempt     INTEGER NOT NULL DEFAULT 1,
    started_ms  INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL DEFAULT 0,
    status      TEXT    NOT NULL,
    error       TEXT    NOT NULL DEFAULT '',
    exit_code   INTEGER NOT NULL DEFAULT 0,
    session_id  TEXT    NOT NULL DEFAULT '',
    messages    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX turns_folder ON turns (folder, started_ms);

-- notices are delivery failures to report in the folder's next prompt.
CREATE TABLE notices (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    folder     TEXT    NOT NULL,
    chat_jid   TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    error      TEXT    NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX notices_folder ON notices (folder, id);
