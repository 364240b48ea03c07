-- A fork names the thread it was forked from (weft.Thread.ForkedFrom, kept in the doc); this
-- column, indexed for the threads that have one, lists a thread's forks (ThreadQuery.ForkedFrom).
-- No foreign key: a fork outlives its original.
ALTER TABLE threads ADD COLUMN forked_from TEXT;
CREATE INDEX threads_forked_from ON threads (forked_from) WHERE forked_from IS NOT NULL;
