-- A run's steps leave the activity index to the run's end. last_activity_at is indexed twice
-- (threads_activity, and threads_user_activity for threads with a user); moving a thread's entries
-- costs about 29,000 instructions and a page or two of WAL, and a turn moved them at the step that
-- drained the user's message and again at the run's end. Now a fenced step of a running thread's
-- own run writes the thread's new activity here instead (the row is written anyway, this column
-- is in no index), and the run's end — the write that releases its lease, or sets a status other
-- than running — moves it to last_activity_at and sets this back to 0. The doc holds the activity
-- as always; only the listing's order lags, for a running thread, until its run ends. 0: nothing
-- pending, as every existing row is.
ALTER TABLE threads ADD COLUMN pending_activity_at INTEGER NOT NULL DEFAULT 0;
