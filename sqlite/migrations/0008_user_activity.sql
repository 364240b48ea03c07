-- threads_user_activity serves one query, a user's threads by activity; a thread without a user is
-- never listed through it, yet its entry moved with every change of its activity (two pages a
-- turn). It now indexes only threads with a user: Threads adds the index's condition to its
-- filter by user, which the planner needs to use a partial index.
DROP INDEX threads_user_activity;
CREATE INDEX threads_user_activity ON threads (user_id, last_activity_at) WHERE user_id <> '';
