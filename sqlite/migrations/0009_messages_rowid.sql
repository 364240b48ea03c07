-- Messages are stored in the order they were written (a rowid table, each new row at the right
-- edge of its b-tree), reached by thread and seq through an index, instead of clustered by thread.
-- Clustered, a thread's rows filled leaves of their own: every message landed on its thread's
-- leaf, so a commit that carried the messages of many threads (a group commit) wrote one page per
-- thread, and a leaf split every few messages. Appended, the messages of one commit share the last
-- pages, and the index's small entries are what is spread. Reads of a whole history were what the
-- clustering served; the writer keeps histories (histcache.go), so a run start no longer reads them.
CREATE TABLE messages_by_write (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    id        TEXT NOT NULL,
    role      TEXT NOT NULL,
    silent    INTEGER NOT NULL,
    depth     INTEGER NOT NULL,
    doc       BLOB NOT NULL -- every field, seq and content included
);
INSERT INTO messages_by_write (thread_id, seq, id, role, silent, depth, doc)
    SELECT thread_id, seq, id, role, silent, depth, doc FROM messages ORDER BY thread_id, seq;
DROP TRIGGER threads_cascade; -- it names messages, which is dropped for a moment
DROP TABLE messages;
ALTER TABLE messages_by_write RENAME TO messages;
CREATE UNIQUE INDEX messages_seq ON messages (thread_id, seq); -- histories are read through it, in order
CREATE UNIQUE INDEX messages_id ON messages (id, thread_id);
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
