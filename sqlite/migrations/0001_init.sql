-- Weft storage schema v1 (storage.md §1). Times are Unix nanoseconds (UTC); 0 means unset.
-- JSON columns hold '' when empty.

CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
);

CREATE TABLE threads (
    id               TEXT PRIMARY KEY,
    agent            TEXT NOT NULL,
    origin_agent     TEXT NOT NULL,
    user_id          TEXT NOT NULL DEFAULT '',
    parent_id        TEXT REFERENCES threads (id) ON DELETE CASCADE,
    root_id          TEXT NOT NULL,
    label            TEXT NOT NULL DEFAULT '',
    tags             TEXT NOT NULL DEFAULT '[]',
    properties       TEXT NOT NULL DEFAULT '{}',
    arguments        TEXT NOT NULL DEFAULT '{}',
    status           TEXT NOT NULL,
    stop_reason      TEXT NOT NULL DEFAULT '',
    preview          TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    last_activity_at INTEGER NOT NULL,
    msg_seq          INTEGER NOT NULL DEFAULT 0, -- last message seq assigned (gap-free counter)
    call_seq         INTEGER NOT NULL DEFAULT 0, -- last tool-call seq assigned
    queue_seq        INTEGER NOT NULL DEFAULT 0  -- last queue seq assigned
);
CREATE INDEX threads_parent ON threads (parent_id);
CREATE INDEX threads_user_activity ON threads (user_id, last_activity_at);
CREATE INDEX threads_activity ON threads (last_activity_at);
CREATE INDEX threads_created ON threads (created_at);

-- Hot tables keep the columns that queries filter on and pack the other fields into doc, a compact
-- tagged binary encoding (codec.go).
CREATE TABLE messages (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    id        TEXT NOT NULL,
    role      TEXT NOT NULL,
    silent    INTEGER NOT NULL,
    depth     INTEGER NOT NULL,
    content   TEXT NOT NULL,
    doc       BLOB NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX messages_id ON messages (thread_id, id);
-- Inserts take seq = threads.msg_seq + 1 inside the write transaction; the trigger advances the
-- counter, so seqs are gap-free and never reused.
CREATE TRIGGER messages_seq AFTER INSERT ON messages BEGIN
    UPDATE threads SET msg_seq = NEW.seq WHERE id = NEW.thread_id;
END;

CREATE TABLE tool_calls (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    call_id   TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    status    TEXT NOT NULL,
    doc       BLOB NOT NULL,
    PRIMARY KEY (thread_id, call_id)
) WITHOUT ROWID;
CREATE TRIGGER tool_calls_seq AFTER INSERT ON tool_calls BEGIN
    UPDATE threads SET call_seq = NEW.seq WHERE id = NEW.thread_id;
END;

CREATE TABLE queue (
    thread_id   TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    id          TEXT NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL DEFAULT '',
    attachments TEXT NOT NULL DEFAULT '',
    silent      INTEGER NOT NULL DEFAULT 0,
    metadata    TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;

CREATE TABLE exec_state (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (thread_id, key)
) WITHOUT ROWID;

CREATE TABLE logs (
    n             INTEGER PRIMARY KEY, -- creation order
    thread_id     TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    id            TEXT NOT NULL,
    depth         INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    doc           BLOB NOT NULL,
    request_body  TEXT NOT NULL,
    response_body TEXT NOT NULL
);
CREATE UNIQUE INDEX logs_id ON logs (thread_id, id);

CREATE TABLE kv (
    thread_id  TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, key)
) WITHOUT ROWID;

-- Files: data inline up to weft.ChunkSize bytes, else chunk_count rows in file_chunks. Ids are never
-- reused (AUTOINCREMENT), so a stream of a replaced file fails instead of mixing contents.
CREATE TABLE files (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id   TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    path        TEXT NOT NULL,
    parent      TEXT NOT NULL,
    name        TEXT NOT NULL,
    is_dir      INTEGER NOT NULL DEFAULT 0,
    is_text     INTEGER NOT NULL DEFAULT 0, -- text MIME: searched by Grep
    mime_type   TEXT NOT NULL DEFAULT '',
    size        INTEGER NOT NULL DEFAULT 0,
    data        BLOB,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    width       INTEGER NOT NULL DEFAULT 0,
    height      INTEGER NOT NULL DEFAULT 0,
    description TEXT NOT NULL DEFAULT '',
    metadata    TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX files_path ON files (thread_id, path);
CREATE INDEX files_parent ON files (thread_id, parent, name);

CREATE TABLE file_chunks (
    file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    n       INTEGER NOT NULL,
    data    BLOB NOT NULL,
    PRIMARY KEY (file_id, n)
);

-- Env values of every scope, AES-256-GCM sealed (envcrypt); owner is the thread or user id, '' for
-- the instance.
CREATE TABLE env (
    scope      TEXT NOT NULL,
    owner      TEXT NOT NULL,
    name       TEXT NOT NULL,
    value_enc  BLOB NOT NULL,
    key_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (scope, owner, name)
);

-- Thread leases; the row outlives releases so tokens only grow.
CREATE TABLE leases (
    thread_id  TEXT PRIMARY KEY REFERENCES threads (id) ON DELETE CASCADE,
    owner      TEXT NOT NULL,
    token      INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
