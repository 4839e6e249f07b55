-- 0021_spend_window: the spend report (status, budget list, the status
-- page) reads every folder's running totals in the day's and the month's
-- windows at once (Store.SpendBySubtree); by span and start it reads only
-- the window's rows, not every total ever kept.
CREATE INDEX spend_totals_window ON spend_totals (span, start_ms);
