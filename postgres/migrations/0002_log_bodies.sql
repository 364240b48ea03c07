-- A log's request body is stored in log_bodies as the bytes it shares with an earlier body of its
-- thread (base, that body's id; shared, how many bytes) followed by the rest; base '' means rest is
-- the whole body (internal/storecontract/bodies.go). logs.request_ref names the log's body; rows written
-- before this version keep theirs in logs.request_body. Body rows are never changed (a replaced log
-- gets a new one), so a body others are stored on stays as it was, whichever node writes the thread.
CREATE TABLE log_bodies (
    thread_id text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    id        text NOT NULL,
    base      text NOT NULL,
    shared    integer NOT NULL,
    rest      bytea NOT NULL,
    PRIMARY KEY (thread_id, id)
);
ALTER TABLE logs ADD COLUMN request_ref text NOT NULL DEFAULT '';
