-- Effects (storage.md §1, §5.1). Times are Unix nanoseconds (UTC); 0 means unset. args holds '' when
-- empty. Rows go with their thread (ON DELETE CASCADE, which also covers descendants).
CREATE TABLE effects (
    id               TEXT PRIMARY KEY,
    thread_id        TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    args             TEXT NOT NULL DEFAULT '',
    run_at           INTEGER NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL DEFAULT 0,
    claimed_by       TEXT NOT NULL DEFAULT '',
    claim_expires_at INTEGER NOT NULL DEFAULT 0,
    error            TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    finished_at      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX effects_thread ON effects (thread_id, run_at, created_at);
-- The claimable rows: pending by due time, processing by claim expiry.
CREATE INDEX effects_pending ON effects (run_at, created_at) WHERE status = 'pending';
CREATE INDEX effects_claims ON effects (claim_expires_at) WHERE status = 'processing';
