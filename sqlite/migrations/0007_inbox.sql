-- A message BeginRun queues for the run it starts waits in its thread's row (inbox: the queued
-- row's doc) instead of a row of the queue table: the row is written anyway, to take the lease, and
-- the run's first step, which drains the message, writes it anyway too, so the message costs no
-- insert and no delete of a queue row, nor the two pages they write. Only a thread whose queue
-- is otherwise empty keeps its message there; NULL when there is none. The queue is the inbox's
-- message, then the queue table's rows, in seq order.
ALTER TABLE threads ADD COLUMN inbox BLOB;
