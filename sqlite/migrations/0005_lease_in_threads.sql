-- A thread's lease moves into its row: the run's last transaction writes the row anyway, and then
-- releases the lease in the same statement and page. The lease columns outlive releases, so
-- tokens only grow.
ALTER TABLE threads ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN lease_expires_at INTEGER NOT NULL DEFAULT 0;
UPDATE threads SET (lease_owner, lease_token, lease_expires_at) =
    (SELECT owner, token, expires_at FROM leases WHERE thread_id = threads.id)
    WHERE id IN (SELECT thread_id FROM leases);
DROP TRIGGER threads_cascade;
DROP TABLE leases;
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
