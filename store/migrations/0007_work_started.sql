-- 0007_work_started: a batch's work rows carry when its turn started, so a
-- restart after a crash mid-turn counts that attempt (a turn must not run
-- more than three times because the gateway kept dying under it).
ALTER TABLE work ADD COLUMN started_ms INTEGER NOT NULL DEFAULT 0;
-- crashes counts the turns of a batch that a gateway crash interrupted,
-- apart from the agent's own failures (attempts).
ALTER TABLE work ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;

-- meta holds one-time facts about the database. routes_seeded: the config's
-- routes were seeded once (a database that already has routes was seeded
-- by an earlier version), so seeding follows the database being new, not
-- the route table being empty.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO meta (key, value) SELECT 'routes_seeded', '1' WHERE EXISTS (SELECT 1 FROM routes);
