-- A thread's run-state documents move into its row (run_state), framed as the exec-state set of
-- qRunStart is: each key and value as its length in bytes, ':' and its bytes. A run writes the
-- thread row at every step boundary anyway; with the run state in it, a step writes one page and
-- one statement less.
ALTER TABLE threads ADD COLUMN run_state TEXT NOT NULL DEFAULT '';
UPDATE threads SET run_state = COALESCE((SELECT group_concat(octet_length(key) || ':' || key || octet_length(value) || ':' || value, '')
    FROM exec_state e WHERE e.thread_id = threads.id), '');
DROP TRIGGER threads_cascade;
DROP TABLE exec_state;
CREATE TRIGGER threads_cascade AFTER DELETE ON threads BEGIN
    DELETE FROM threads WHERE parent_id = old.id;
    DELETE FROM messages WHERE thread_id = old.id;
    DELETE FROM tool_calls WHERE thread_id = old.id;
    DELETE FROM queue WHERE thread_id = old.id;
    DELETE FROM logs WHERE thread_id = old.id;
    DELETE FROM kv WHERE thread_id = old.id;
    DELETE FROM files WHERE thread_id = old.id;
    DELETE FROM leases WHERE thread_id = old.id;
    DELETE FROM effects WHERE thread_id = old.id;
END;
