-- 0011_budgets: a US dollar cap per group and day or month (0: no cap),
-- covering the group's subtree. A running gateway picks changes up through
-- the revision counter.
CREATE TABLE budgets (
    folder      TEXT    PRIMARY KEY,
    daily_usd   REAL    NOT NULL DEFAULT 0,
    monthly_usd REAL    NOT NULL DEFAULT 0,
    updated_ms  INTEGER NOT NULL
);
CREATE TRIGGER budgets_rev_insert AFTER INSERT ON budgets BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER budgets_rev_update AFTER UPDATE ON budgets BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER budgets_rev_delete AFTER DELETE ON budgets BEGIN
    UPDATE revision SET n = n + 1 WHERE id = 1;
END;
-- Budget checks sum a subtree's cost over a window from the index alone.
CREATE INDEX turns_spend ON turns (folder, started_ms, cost_usd);
