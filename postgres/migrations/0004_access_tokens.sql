-- OAuth access tokens of /mcp, kept as the hex SHA-256 of their text. A token lives no longer than
-- the API key its user signed in with (key_id) nor than expires_at.
CREATE TABLE access_tokens (
    hash       text COLLATE "C" PRIMARY KEY,
    user_id    text NOT NULL REFERENCES users (id),
    key_id     text NOT NULL REFERENCES api_keys (id),
    client     text NOT NULL,
    resource   text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    revoked_at bigint
);
CREATE INDEX access_tokens_expiry ON access_tokens (expires_at);
