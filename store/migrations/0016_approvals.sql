-- 0016_approvals: approval requests of ask rules (grants '?') and of
-- approve_tool, each with its decision; the session grants "Allow for this
-- session" made; the approvers the CLI set per group.
-- status: pending, then once allowed | session | denied | timeout | expired
-- (a conditional UPDATE: the first decision wins, a later one changes
-- nothing). chat_jid/topic/message_id: where the request was posted
-- ("" when it could not be), buttons: posted with buttons.
CREATE TABLE approvals (
    id          TEXT    PRIMARY KEY,
    folder      TEXT    NOT NULL,
    turn_id     TEXT    NOT NULL DEFAULT '',
    session_id  TEXT    NOT NULL DEFAULT '',
    tool        TEXT    NOT NULL,
    args        TEXT    NOT NULL DEFAULT '',
    chat_jid    TEXT    NOT NULL DEFAULT '',
    topic       TEXT    NOT NULL DEFAULT '',
    message_id  TEXT    NOT NULL DEFAULT '',
    buttons     INTEGER NOT NULL DEFAULT 0,
    status      TEXT    NOT NULL DEFAULT 'pending',
    decider     TEXT    NOT NULL DEFAULT '',
    reason      TEXT    NOT NULL DEFAULT '',
    created_ms  INTEGER NOT NULL,
    decided_ms  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX approvals_pending ON approvals (created_ms) WHERE status = 'pending';
CREATE INDEX approvals_created ON approvals (created_ms);

-- approval_grants: "Allow for this session": the tool, any arguments, in
-- the agent session the turn resumed (session_id) or, for a fresh session,
-- in the turns that later record the session the granting turn began.
CREATE TABLE approval_grants (
    approval_id TEXT    PRIMARY KEY,
    folder      TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    turn_id     TEXT    NOT NULL DEFAULT '',
    session_id  TEXT    NOT NULL DEFAULT '',
    created_ms  INTEGER NOT NULL
);
CREATE INDEX approval_grants_tool ON approval_grants (folder, tool);

-- approvers: the JIDs that may decide a group's requests, as `switchboard
-- approvals approvers FOLDER JID...` set them (they replace the config's
-- groups[].approvals.approvers for that folder).
CREATE TABLE approvers (
    folder   TEXT    NOT NULL,
    jid      TEXT    NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (folder, jid)
);
