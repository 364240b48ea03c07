-- Room in a new thread's row for its first run. Threads are created in order, each row at the
-- right edge of the threads b-tree, so their leaves are full; a new thread's first run grows its
-- row (BeginRun puts the user's message in it, the reply's step its open call), which overflows
-- the leaf and rebalances it with its siblings: about 22,000 instructions and three or four more
-- pages of WAL a turn, on the turn that follows a thread's creation. A row is now created with
-- pad bytes that the first write of its lease (BeginRun's) drops, in the same statement: the row
-- grows into room it held, and leaves that room in its leaf for later turns. NULL: no room held,
-- as every existing row has none.
ALTER TABLE threads ADD COLUMN pad BLOB;
