-- The hot per-thread state moves into the thread row, and deletes cascade through triggers.
--
-- A run writes its thread's row at every step boundary. With the run-state documents (run_state)
-- and the lease in that row, a step that changes the run state, and the step that releases the
-- lease, write one page and one statement less. run_state holds each key and value framed as
-- its length in bytes, ':' and its bytes (as BeginRun reads sets). The lease columns outlive
-- releases, so tokens only grow.
ALTER TABLE threads ADD COLUMN run_state TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN lease_expires_at INTEGER NOT NULL DEFAULT 0;
UPDATE threads SET run_state = COALESCE((SELECT group_concat(octet_length(key) || ':' || key || octet_length(value) || ':' || value, '')
    FROM exec_state e WHERE e.thread_id = threads.id), '');
UPDATE threads SET (lease_owner, lease_token, lease_expires_at) =
    (SELECT owner, token, expires_at FROM leases WHERE thread_id = threads.id)
    WHERE id IN (SELECT thread_id FROM leases);
DROP TABLE exec_state;
DROP TABLE leases;

-- Connections run with foreign_keys off: a foreign-key check costs a parent lookup on every insert
-- of a child row (about 5% of a tool turn), and every write already checks its thread inside the
-- same write transaction (one writer at a time), so the checks found nothing. The REFERENCES
-- clauses stay as documentation of the links; these triggers do their ON DELETE CASCADE, and
-- recursive_triggers (on) carries a thread's delete to its descendants.
CREATE TRIGGER threads_cascade AFTER DELETE ON threads BEGIN
    DELETE FROM threads WHERE parent_id = old.id;
    DELETE FROM messages WHERE thread_id = old.id;
    DELETE FROM tool_calls WHERE thread_id = old.id;
    DELETE FROM queue WHERE thread_id = old.id;
    DELETE FROM logs WHERE thread_id = old.id;
    DELETE FROM kv WHERE thread_id = old.id;
    DELETE FROM files WHERE thread_id = old.id;
    DELETE FROM effects WHERE thread_id = old.id;
END;

CREATE TRIGGER files_cascade AFTER DELETE ON files BEGIN
    DELETE FROM file_chunks WHERE file_id = old.id;
END;
