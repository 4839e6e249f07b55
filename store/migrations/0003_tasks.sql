-- 0003_tasks: scheduled tasks and their runs. Slots and next runs are unix
-- seconds (UTC instants; slots are whole seconds); other times unix ms.
CREATE TABLE tasks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    folder     TEXT    NOT NULL,
    chat_jid   TEXT    NOT NULL,
    prompt     TEXT    NOT NULL,
    spec       TEXT    NOT NULL,
    kind       TEXT    NOT NULL,            -- cron | interval | once
    timezone   TEXT    NOT NULL,
    context    TEXT    NOT NULL DEFAULT 'group', -- group | isolated
    missed     TEXT    NOT NULL DEFAULT 'skip',  -- skip | once | all
    status     TEXT    NOT NULL DEFAULT 'active',
    next_s     INTEGER NOT NULL DEFAULT 0,  -- 0: no slot left
    skipped    INTEGER NOT NULL DEFAULT 0,  -- slots passed over by the missed policy
    created_by TEXT    NOT NULL DEFAULT '',
    created_ms INTEGER NOT NULL
);
CREATE INDEX tasks_due ON tasks (status, next_s);
CREATE INDEX tasks_folder ON tasks (folder);

CREATE TABLE task_runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     INTEGER NOT NULL,
    slot_s      INTEGER NOT NULL,
    status      TEXT    NOT NULL,  -- fired | succeeded | failed
    started_ms  INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL DEFAULT 0,
    turn_id     TEXT    NOT NULL DEFAULT '',
    error       TEXT    NOT NULL DEFAULT '',
    UNIQUE (task_id, slot_s)
);

-- A running gateway must notice tasks added, paused, resumed or cancelled by
-- the CLI; advancing next_s on every fire must not count as a change.
CREATE TRIGGER tasks_rev_insert AFTER INSERT ON tasks BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER tasks_rev_status AFTER UPDATE OF status ON tasks WHEN old.status <> new.status BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
