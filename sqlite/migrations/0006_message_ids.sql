-- A message's id leads its index. Ids are time-ordered (weft.NewID), so a new message's entry goes
-- to the index's right edge, the page the last message's went to, instead of into the middle of
-- its thread's entries (a page read, often split, per insert). Unique per thread as before.
DROP INDEX messages_id;
CREATE UNIQUE INDEX messages_id ON messages (id, thread_id);
