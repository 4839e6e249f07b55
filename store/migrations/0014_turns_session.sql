-- 0014_turns_session: a session's turns are found by their own index: the
-- tokens a Codex thread was already charged (SessionTokens, at every Codex
-- turn) and a Claude session's running cost (SessionCost) read the
-- session's rows, not every turn the folder ever ran.
CREATE INDEX turns_session ON turns (folder, session_id, started_ms);
