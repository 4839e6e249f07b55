-- 0019_budget_totals: running totals of what turns cost, so that a budget
-- check reads a bounded number of rows however many turns were recorded
-- (it summed every turn of the subtree in the window). FinishBatch adds a
-- turn's cost in the transaction that records it, to its folder and to
-- each ancestor (a budget covers its subtree), in the quarter hour and the
-- UTC day its turn started: every time zone's day starts on a quarter hour,
-- so a day or month window is whole quarters up to the next UTC midnight,
-- then whole days (Store.Spent).
CREATE TABLE spend_totals (
    folder   TEXT    NOT NULL,
    span     INTEGER NOT NULL, -- 0: a quarter hour; 1: a UTC day
    start_ms INTEGER NOT NULL, -- where the quarter or day starts
    micros   INTEGER NOT NULL, -- the cost of the turns started in it
    PRIMARY KEY (folder, span, start_ms)
) WITHOUT ROWID;

-- The turns recorded so far, each counted for its folder and every
-- ancestor (rtrim(f, replace(f, '/', '')) cuts f after its last '/').
WITH RECURSIVE subtree(folder, started_ms, micros) AS (
    SELECT folder, started_ms, cost_micros FROM turns WHERE cost_micros <> 0
    UNION ALL
    SELECT rtrim(rtrim(folder, replace(folder, '/', '')), '/'), started_ms, micros FROM subtree WHERE instr(folder, '/') > 0
)
INSERT INTO spend_totals (folder, span, start_ms, micros)
    SELECT folder, 0, started_ms - started_ms % 900000, SUM(micros) FROM subtree GROUP BY 1, 3
    UNION ALL
    SELECT folder, 1, started_ms - started_ms % 86400000, SUM(micros) FROM subtree GROUP BY 1, 3;
