-- A thread's event log, kept for streams that reconnect: the events of each committed step, in the
-- step's own transaction, numbered per thread from 1 without gaps. Old events are pruned to the
-- newest weft.EventWindow (and some) by the writer.
CREATE TABLE events (
    thread_id  TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;

DROP TRIGGER threads_cascade;
CREATE TRIGGER threads_cascade AFTER DELETE ON threads BEGIN
    DELETE FROM threads WHERE parent_id = old.id;
    DELETE FROM messages WHERE thread_id = old.id;
    DELETE FROM tool_calls WHERE thread_id = old.id;
    DELETE FROM queue WHERE thread_id = old.id;
    DELETE FROM logs WHERE thread_id = old.id;
    DELETE FROM kv WHERE thread_id = old.id;
    DELETE FROM files WHERE thread_id = old.id;
    DELETE FROM effects WHERE thread_id = old.id;
    DELETE FROM events WHERE thread_id = old.id;
END;
