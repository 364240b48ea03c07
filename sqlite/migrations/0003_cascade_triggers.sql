-- Deletes cascade through triggers, and connections run with foreign_keys off: a foreign-key check
-- costs a parent lookup on every insert of a child row (about 5% of a tool turn), and every write
-- already checks its thread inside the same write transaction (one writer at a time), so the
-- checks found nothing. The REFERENCES clauses above stay as documentation of the links.
-- recursive_triggers is on, so deleting a thread deletes its descendants' rows too.
CREATE TRIGGER threads_cascade AFTER DELETE ON threads BEGIN
    DELETE FROM threads WHERE parent_id = old.id;
    DELETE FROM messages WHERE thread_id = old.id;
    DELETE FROM tool_calls WHERE thread_id = old.id;
    DELETE FROM queue WHERE thread_id = old.id;
    DELETE FROM exec_state WHERE thread_id = old.id;
    DELETE FROM logs WHERE thread_id = old.id;
    DELETE FROM kv WHERE thread_id = old.id;
    DELETE FROM files WHERE thread_id = old.id;
    DELETE FROM leases WHERE thread_id = old.id;
    DELETE FROM effects WHERE thread_id = old.id;
END;

CREATE TRIGGER files_cascade AFTER DELETE ON files BEGIN
    DELETE FROM file_chunks WHERE file_id = old.id;
END;
