-- A thread's open calls: the tool-call records a transaction puts while it writes the thread row
-- anyway wait in that row (the calls column) instead of a tool_calls row. A turn's first step
-- writes the row (its status, run state, counters) and put the reply's call marked started in a
-- tool_calls row of its own: an insert into a table clustered by thread, a page and a balance of
-- its own. Now the call travels in the row, and is stored in tool_calls by the first transaction
-- that changes it without writing the row (the tool's result), or when the row holds more than a
-- few. A call is in tool_calls or in the row; a row entry whose call is also in tool_calls is stale
-- (tool_calls' is the newer record) and goes at the row's next write. NULL: no open call, as
-- every existing row has none.
ALTER TABLE threads ADD COLUMN calls BLOB;
