-- 0009_mcp_tokens: bearer tokens of the MCP Streamable HTTP endpoint
-- (mcp.listen). Only the SHA-256 of a token is stored; the token itself is
-- shown once (to the turn's agent, or to the operator who minted it).
-- A turn's token (turn_id set) expires at the turn's deadline and is deleted
-- when the turn finishes, in FinishBatch's transaction; an operator's token
-- (turn_id '') lives until expires_ms or `switchboard token rm`.
CREATE TABLE mcp_tokens (
    id         TEXT PRIMARY KEY,
    hash       BLOB NOT NULL UNIQUE,
    folder     TEXT NOT NULL,
    turn_id    TEXT NOT NULL DEFAULT '',
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX mcp_tokens_turn ON mcp_tokens (turn_id) WHERE turn_id != '';
