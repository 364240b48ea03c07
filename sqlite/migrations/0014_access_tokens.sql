-- OAuth access tokens of /mcp, kept as the hex SHA-256 of their text. A token lives no longer than
-- the API key its user signed in with (key_id) nor than expires_at.
CREATE TABLE access_tokens (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id),
    key_id     TEXT NOT NULL REFERENCES api_keys (id),
    client     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX access_tokens_expiry ON access_tokens (expires_at);
