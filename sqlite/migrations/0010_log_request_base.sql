-- A log's request body may be stored as the bytes it shares with an earlier log's request body
-- of the same thread (request_base, that log's id; request_prefix, how many bytes) followed by
-- request_body, the rest (bodies.go). '' and 0: request_body is the whole body, as every row
-- written before this version is.
ALTER TABLE logs ADD COLUMN request_base TEXT NOT NULL DEFAULT '';
ALTER TABLE logs ADD COLUMN request_prefix INTEGER NOT NULL DEFAULT 0;
