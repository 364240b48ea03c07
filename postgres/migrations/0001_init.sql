-- Weft's PostgreSQL schema (storage.md §1; docs/postgres.md explains it).
--
-- Times are Unix nanoseconds (UTC) in bigint, 0 meaning unset: exact to the nanosecond, as the other
-- stores keep them, and compared with the clock of the node that writes. Records are kept whole as
-- `doc` (json: the text as Weft wrote it, key order and numbers untouched) beside the columns that
-- queries filter and sort on; read them with `doc->>'field'`. Everything a thread owns goes with it
-- (ON DELETE CASCADE, descendants included).

CREATE TABLE settings (
    name  text PRIMARY KEY,
    value bytea NOT NULL
);

-- The thread row is also the thread's lock: every write transaction of a thread takes it FOR UPDATE
-- first, which orders a thread's writers across nodes and keeps its counters (the last message,
-- tool-call, log, queue and event number assigned; numbers are never reused) and its lease.
CREATE TABLE threads (
    id               text COLLATE "C" PRIMARY KEY, -- ids sort by creation in byte order
    parent_id        text COLLATE "C" REFERENCES threads (id) ON DELETE CASCADE,
    root_id          text NOT NULL,
    user_id          text NOT NULL DEFAULT '',
    agent            text NOT NULL,
    label            text NOT NULL DEFAULT '',
    preview          text NOT NULL DEFAULT '',
    tags             text[] NOT NULL DEFAULT '{}',
    status           text NOT NULL,
    created_at       bigint NOT NULL,
    last_activity_at bigint NOT NULL,
    doc              json NOT NULL,
    msg_seq          bigint NOT NULL DEFAULT 0,
    call_seq         bigint NOT NULL DEFAULT 0,
    log_seq          bigint NOT NULL DEFAULT 0,
    queue_seq        bigint NOT NULL DEFAULT 0,
    event_seq        bigint NOT NULL DEFAULT 0,
    -- The lease (storage.md §4); the token outlives releases, so tokens only grow.
    lease_owner      text NOT NULL DEFAULT '',
    lease_token      bigint NOT NULL DEFAULT 0,
    lease_expires_at bigint NOT NULL DEFAULT 0
);
CREATE INDEX threads_parent ON threads (parent_id);
CREATE INDEX threads_user_activity ON threads (user_id, last_activity_at DESC, id DESC);
CREATE INDEX threads_activity ON threads (last_activity_at DESC, id DESC);
CREATE INDEX threads_created ON threads (created_at, id);

CREATE TABLE messages (
    thread_id text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       bigint NOT NULL,
    id        text NOT NULL,
    role      text NOT NULL,
    silent    boolean NOT NULL,
    depth     integer NOT NULL,
    doc       json NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE UNIQUE INDEX messages_id ON messages (thread_id, id);

CREATE TABLE tool_calls (
    thread_id text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    call_id   text NOT NULL,
    seq       bigint NOT NULL,
    status    text NOT NULL,
    doc       json NOT NULL,
    PRIMARY KEY (thread_id, call_id)
);
CREATE INDEX tool_calls_seq ON tool_calls (thread_id, seq);

CREATE TABLE queue (
    thread_id text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       bigint NOT NULL,
    doc       json NOT NULL,
    PRIMARY KEY (thread_id, seq)
);

CREATE TABLE exec_state (
    thread_id text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    key       text NOT NULL,
    value     json NOT NULL,
    PRIMARY KEY (thread_id, key)
);

-- n is the creation order listings sort by. Bodies are kept verbatim as bytes: a provider's body is
-- not always JSON.
CREATE TABLE logs (
    thread_id     text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    id            text NOT NULL,
    n             bigint NOT NULL,
    depth         integer NOT NULL,
    doc           json NOT NULL,
    request_body  bytea,
    response_body bytea,
    PRIMARY KEY (thread_id, id)
);
CREATE INDEX logs_order ON logs (thread_id, n);

CREATE TABLE kv (
    thread_id  text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    key        text NOT NULL,
    value      json NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (thread_id, key)
);

-- A thread's events for streams that reconnect, numbered per thread from 1 without gaps and written
-- in the transaction of the step they describe; pruned to the newest weft.EventWindow (and some).
CREATE TABLE events (
    thread_id  text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    type       text NOT NULL,
    data       json NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (thread_id, seq)
);

-- Files: data inline up to weft.ChunkSize bytes, else chunk_count rows in file_chunks. Ids come from
-- a sequence and are never reused, so a stream of a replaced file fails instead of mixing contents.
CREATE TABLE files (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread_id   text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    path        text COLLATE "C" NOT NULL, -- byte order, as Weft sorts paths and selects subtrees
    parent      text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    is_dir      boolean NOT NULL DEFAULT false,
    is_text     boolean NOT NULL DEFAULT false,
    mime_type   text NOT NULL DEFAULT '',
    size        bigint NOT NULL DEFAULT 0,
    data        bytea,
    chunk_count integer NOT NULL DEFAULT 0,
    width       integer NOT NULL DEFAULT 0,
    height      integer NOT NULL DEFAULT 0,
    description text NOT NULL DEFAULT '',
    metadata    json,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL
);
CREATE UNIQUE INDEX files_path ON files (thread_id, path);
CREATE INDEX files_parent ON files (thread_id, parent, name);

CREATE TABLE file_chunks (
    file_id bigint NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    n       integer NOT NULL,
    data    bytea NOT NULL,
    PRIMARY KEY (file_id, n)
);

-- Env values of every scope, AES-256-GCM sealed (envcrypt) with the id of the key that sealed them;
-- owner is the thread or user id, '' for the instance. Thread values go with their thread
-- (DeleteThread removes them).
CREATE TABLE env (
    scope      text NOT NULL,
    owner      text NOT NULL,
    name       text NOT NULL,
    value_enc  bytea NOT NULL,
    key_id     text NOT NULL,
    type       text NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (scope, owner, name)
);

-- Effects (storage.md §5.1): claimed with FOR UPDATE SKIP LOCKED, so each goes to one node.
CREATE TABLE effects (
    id               text COLLATE "C" PRIMARY KEY,
    thread_id        text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    name             text NOT NULL,
    args             json,
    run_at           bigint NOT NULL,
    status           text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL DEFAULT 0,
    claimed_by       text NOT NULL DEFAULT '',
    claim_expires_at bigint NOT NULL DEFAULT 0,
    error            text NOT NULL DEFAULT '',
    created_at       bigint NOT NULL,
    finished_at      bigint NOT NULL DEFAULT 0
);
CREATE INDEX effects_thread ON effects (thread_id, run_at, created_at, id);
CREATE INDEX effects_pending ON effects (run_at, created_at, id) WHERE status = 'pending';
CREATE INDEX effects_claims ON effects (claim_expires_at) WHERE status = 'processing';

-- The users and API keys of a server. A key is kept only as the hex SHA-256 of its text.
CREATE TABLE users (
    id         text COLLATE "C" PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    is_admin   boolean NOT NULL DEFAULT false,
    created_at bigint NOT NULL
);

CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    user_id    text NOT NULL REFERENCES users (id),
    hash       text NOT NULL UNIQUE,
    hint       text NOT NULL,
    created_at bigint NOT NULL,
    revoked_at bigint
);
CREATE INDEX api_keys_user ON api_keys (user_id, created_at);
