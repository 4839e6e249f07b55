-- 0005_adapter_values: small values an adapter persists across restarts
-- (Telegram's update offset, Slack's seen event ids), in its own namespace.
-- expires_ms = 0 keeps a value until it is overwritten.
CREATE TABLE adapter_values (
    adapter    TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    expires_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (adapter, key)
);
CREATE INDEX adapter_values_expiry ON adapter_values (expires_ms) WHERE expires_ms > 0;
