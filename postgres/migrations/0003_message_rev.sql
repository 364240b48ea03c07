-- threads.msg_rev changes whenever a message of the thread is changed or removed, by Weft or by
-- anyone else (adding one leaves it as it is). A node keeps the histories its runs start from;
-- a run start reads only the messages after the last it keeps, and the whole history when msg_rev
-- is no longer the value it read with them (postgres/history.go). Values come from one sequence,
-- so a thread deleted and made again under its id never has an earlier one again. Threads made
-- before this version start at 0, which the sequence never gives (a constant default adds the
-- column without rewriting the table); threads made after take their first value from it.
CREATE SEQUENCE message_revs;
ALTER TABLE threads ADD COLUMN msg_rev bigint NOT NULL DEFAULT 0;
ALTER TABLE threads ALTER COLUMN msg_rev SET DEFAULT nextval('message_revs');

-- The function names its tables through the schema of the table that fired it, so that a session
-- with another search_path (psql, an operator) moves msg_rev too.
CREATE FUNCTION weft_messages_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        EXECUTE format('UPDATE %1$I.threads SET msg_rev = nextval(%2$L)',
            TG_TABLE_SCHEMA, quote_ident(TG_TABLE_SCHEMA) || '.message_revs');
    ELSE
        EXECUTE format('UPDATE %1$I.threads SET msg_rev = nextval(%2$L) WHERE id IN (SELECT DISTINCT thread_id FROM gone)',
            TG_TABLE_SCHEMA, quote_ident(TG_TABLE_SCHEMA) || '.message_revs');
    END IF;
    RETURN NULL;
END $$;

-- Statement triggers with the changed rows as a table: one UPDATE of threads per statement, not
-- per row (a thread's delete cascades to its messages in one statement per thread).
CREATE TRIGGER messages_updated AFTER UPDATE ON messages REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION weft_messages_changed();
CREATE TRIGGER messages_deleted AFTER DELETE ON messages REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION weft_messages_changed();
CREATE TRIGGER messages_truncated AFTER TRUNCATE ON messages
    FOR EACH STATEMENT EXECUTE FUNCTION weft_messages_changed();
