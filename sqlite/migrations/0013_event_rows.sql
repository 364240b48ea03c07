-- A thread's events are keyed by its number, and a transaction's events share a row. A served run
-- records every event it emits (engine.Options.RecordEvents), ~15 a tool turn in 7 transactions;
-- as a row each, they cost about as much as the turn's messages (bench/README.md, "A served
-- turn"). Now a row holds one event (type is its type), or the events one transaction appended,
-- packed (type is NULL, data their packed records, seq the last one's; sqlite/logs.go). The rows
-- kept are one event each, as before.
--
-- The rows are a rowid table's, found through a small index, where they were the entries of a
-- WITHOUT ROWID b-tree keyed by (thread, seq): new rows go at the table's right edge whatever
-- their thread, and only the index's short entries go in the middle of a b-tree. Among many
-- threads, rows of hundreds of bytes put there split a leaf every few inserts, and each commit
-- wrote the pages split (bench/README.md: 5 % of a served turn).
CREATE TABLE events_numbered (
    thread_num INTEGER NOT NULL REFERENCES threads (num) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
INSERT INTO events_numbered (thread_num, seq, type, data, created_at)
    SELECT t.num, e.seq, e.type, e.data, e.created_at FROM events e JOIN threads t ON t.id = e.thread_id;

DROP TRIGGER threads_cascade; -- it names the table replaced
DROP TABLE events;
ALTER TABLE events_numbered RENAME TO events;
CREATE UNIQUE INDEX events_seq ON events (thread_num, seq);

CREATE TRIGGER threads_cascade AFTER DELETE ON threads BEGIN
    DELETE FROM threads WHERE parent_id = old.id;
    DELETE FROM messages WHERE thread_num = old.num;
    DELETE FROM tool_calls WHERE thread_num = old.num;
    DELETE FROM queue WHERE thread_id = old.id;
    DELETE FROM logs WHERE thread_num = old.num;
    DELETE FROM kv WHERE thread_id = old.id;
    DELETE FROM files WHERE thread_id = old.id;
    DELETE FROM effects WHERE thread_id = old.id;
    DELETE FROM events WHERE thread_num = old.num;
END;
