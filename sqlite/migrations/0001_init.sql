-- Weft storage schema v1 (storage.md §1). Times are Unix nanoseconds (UTC); 0 means unset.
-- JSON columns hold '' when empty.

CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
);

-- Threads keep the columns that listings filter and sort on; doc holds every field (codec.go).
CREATE TABLE threads (
    id               TEXT PRIMARY KEY,
    agent            TEXT NOT NULL,
    user_id          TEXT NOT NULL DEFAULT '',
    parent_id        TEXT REFERENCES threads (id) ON DELETE CASCADE,
    root_id          TEXT NOT NULL,
    label            TEXT NOT NULL DEFAULT '',
    tags             TEXT NOT NULL DEFAULT '[]', -- JSON array, for the tag filter
    status           TEXT NOT NULL,
    preview          TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    last_activity_at INTEGER NOT NULL,
    doc              BLOB NOT NULL,
    -- Sequence counters, kept by the store (write.go): msg_seq is only a floor (the highest seq of a
    -- deleted message), the next message seq being max(msg_seq, MAX(messages.seq)) + 1, so inserting
    -- a message does not write the thread row; the others are the last number assigned.
    msg_seq          INTEGER NOT NULL DEFAULT 0,
    call_seq         INTEGER NOT NULL DEFAULT 0,
    log_seq          INTEGER NOT NULL DEFAULT 0,
    queue_seq        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX threads_parent ON threads (parent_id);
CREATE INDEX threads_user_activity ON threads (user_id, last_activity_at);
CREATE INDEX threads_activity ON threads (last_activity_at);
CREATE INDEX threads_created ON threads (created_at);

-- Hot tables keep the columns that queries filter on and pack the fields into doc, a compact tagged
-- binary encoding (codec.go): reading a row is reading one value. A write touches one page per
-- b-tree, so each hot table has as few b-trees as its lookups allow.
CREATE TABLE messages (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    id        TEXT NOT NULL,
    role      TEXT NOT NULL,
    silent    INTEGER NOT NULL,
    depth     INTEGER NOT NULL,
    doc       BLOB NOT NULL, -- every field, seq and content included
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX messages_id ON messages (thread_id, id);

CREATE TABLE tool_calls (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    call_id   TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    status    TEXT NOT NULL,
    doc       BLOB NOT NULL,
    PRIMARY KEY (thread_id, call_id)
) WITHOUT ROWID;

CREATE TABLE queue (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    doc       BLOB NOT NULL, -- every field, seq included
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;

CREATE TABLE exec_state (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (thread_id, key)
) WITHOUT ROWID;

-- One b-tree keyed by id; n (from threads.log_seq) is the creation order, which listings sort by.
-- Bodies come last so that a listing does not read the overflow pages of big rows.
CREATE TABLE logs (
    thread_id     TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    id            TEXT NOT NULL,
    n             INTEGER NOT NULL,
    depth         INTEGER NOT NULL,
    doc           BLOB NOT NULL,
    request_body  TEXT NOT NULL,
    response_body TEXT NOT NULL,
    PRIMARY KEY (thread_id, id)
) WITHOUT ROWID;

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

-- Env values of every scope, AES-256-GCM sealed (envcrypt) in doc with the key id, type and time;
-- owner is the thread or user id, '' for the instance.
CREATE TABLE env (
    scope TEXT NOT NULL,
    owner TEXT NOT NULL,
    name  TEXT NOT NULL,
    doc   BLOB NOT NULL,
    PRIMARY KEY (scope, owner, name)
) WITHOUT ROWID;

-- Thread leases; the row outlives releases so tokens only grow.
CREATE TABLE leases (
    thread_id  TEXT PRIMARY KEY REFERENCES threads (id) ON DELETE CASCADE,
    owner      TEXT NOT NULL,
    token      INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
