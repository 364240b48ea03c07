-- A thread's messages, tool calls and logs name it by a number instead of its text id. The rows of
-- every step carry the thread's key in their b-trees' keys (messages_seq, and tool_calls' and logs'
-- primary keys): as the 30-character id, each entry was 30 bytes longer, fewer fit on a page, and
-- every seek compared ids byte by byte; keyed by an integer, a tool turn's SQL costs about a
-- fifteenth less (bench/cmd/layouts -intkey all), and its b-trees split less often.
--
-- The number is the thread row's INTEGER PRIMARY KEY (num), so that it stays what it is through a
-- VACUUM (a rowid that no column aliases may change), and the row's rowid, by which a run's writes
-- find it, is it. AUTOINCREMENT: a number is never used again, so none names two threads over
-- time (a thread created after the newest was deleted would otherwise take its number). Rows that name a thread by id from other tables (queue, kv, files, effects,
-- events, env) are not on a step's path and keep the id.
CREATE TABLE threads_numbered (
    num              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    agent            TEXT NOT NULL,
    user_id          TEXT NOT NULL DEFAULT '',
    parent_id        TEXT REFERENCES threads (id) ON DELETE CASCADE,
    root_id          TEXT NOT NULL,
    label            TEXT NOT NULL DEFAULT '',
    tags             TEXT NOT NULL DEFAULT '[]',
    status           TEXT NOT NULL,
    preview          TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    last_activity_at INTEGER NOT NULL,
    doc              BLOB NOT NULL,
    msg_seq          INTEGER NOT NULL DEFAULT 0,
    call_seq         INTEGER NOT NULL DEFAULT 0,
    log_seq          INTEGER NOT NULL DEFAULT 0,
    queue_seq        INTEGER NOT NULL DEFAULT 0,
    run_state        TEXT NOT NULL DEFAULT '',
    lease_owner      TEXT NOT NULL DEFAULT '',
    lease_token      INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER NOT NULL DEFAULT 0,
    inbox            BLOB
);
INSERT INTO threads_numbered (num, id, agent, user_id, parent_id, root_id, label, tags, status, preview, created_at,
        last_activity_at, doc, msg_seq, call_seq, log_seq, queue_seq, run_state, lease_owner, lease_token, lease_expires_at, inbox)
    SELECT rowid, id, agent, user_id, parent_id, root_id, label, tags, status, preview, created_at,
        last_activity_at, doc, msg_seq, call_seq, log_seq, queue_seq, run_state, lease_owner, lease_token, lease_expires_at, inbox
    FROM threads;

CREATE TABLE messages_numbered (
    thread_num INTEGER NOT NULL REFERENCES threads (num) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    id         TEXT NOT NULL,
    role       TEXT NOT NULL,
    silent     INTEGER NOT NULL,
    depth      INTEGER NOT NULL,
    doc        BLOB NOT NULL -- every field, seq and content included
);
INSERT INTO messages_numbered (thread_num, seq, id, role, silent, depth, doc)
    SELECT t.num, m.seq, m.id, m.role, m.silent, m.depth, m.doc
    FROM messages m JOIN threads_numbered t ON t.id = m.thread_id ORDER BY m.rowid;

CREATE TABLE tool_calls_numbered (
    thread_num INTEGER NOT NULL REFERENCES threads (num) ON DELETE CASCADE,
    call_id    TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    status     TEXT NOT NULL,
    doc        BLOB NOT NULL,
    PRIMARY KEY (thread_num, call_id)
) WITHOUT ROWID;
INSERT INTO tool_calls_numbered (thread_num, call_id, seq, status, doc)
    SELECT t.num, c.call_id, c.seq, c.status, c.doc FROM tool_calls c JOIN threads_numbered t ON t.id = c.thread_id;

CREATE TABLE logs_numbered (
    thread_num     INTEGER NOT NULL REFERENCES threads (num) ON DELETE CASCADE,
    id             TEXT NOT NULL,
    n              INTEGER NOT NULL,
    depth          INTEGER NOT NULL,
    doc            BLOB NOT NULL,
    request_base   TEXT NOT NULL DEFAULT '',
    request_prefix INTEGER NOT NULL DEFAULT 0,
    request_body   TEXT NOT NULL,
    response_body  TEXT NOT NULL,
    PRIMARY KEY (thread_num, id)
) WITHOUT ROWID;
INSERT INTO logs_numbered (thread_num, id, n, depth, doc, request_base, request_prefix, request_body, response_body)
    SELECT t.num, l.id, l.n, l.depth, l.doc, l.request_base, l.request_prefix, l.request_body, l.response_body
    FROM logs l JOIN threads_numbered t ON t.id = l.thread_id;

DROP TRIGGER threads_cascade; -- it names the tables replaced
DROP TABLE messages;
DROP TABLE tool_calls;
DROP TABLE logs;
DROP TABLE threads;
ALTER TABLE threads_numbered RENAME TO threads;
ALTER TABLE messages_numbered RENAME TO messages;
ALTER TABLE tool_calls_numbered RENAME TO tool_calls;
ALTER TABLE logs_numbered RENAME TO logs;

CREATE INDEX threads_parent ON threads (parent_id);
CREATE INDEX threads_user_activity ON threads (user_id, last_activity_at) WHERE user_id <> '';
CREATE INDEX threads_activity ON threads (last_activity_at);
CREATE INDEX threads_created ON threads (created_at);
CREATE UNIQUE INDEX messages_seq ON messages (thread_num, seq); -- histories are read through it, in order

CREATE TRIGGER threads_cascade AFTER DELETE ON threads BEGIN
    DELETE FROM threads WHERE parent_id = old.id;
    DELETE FROM messages WHERE thread_num = old.num;
    DELETE FROM tool_calls WHERE thread_num = old.num;
    DELETE FROM queue WHERE thread_id = old.id;
    DELETE FROM logs WHERE thread_num = old.num;
    DELETE FROM kv WHERE thread_id = old.id;
    DELETE FROM files WHERE thread_id = old.id;
    DELETE FROM effects WHERE thread_id = old.id;
    DELETE FROM events WHERE thread_id = old.id;
END;
