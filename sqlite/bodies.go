package sqlite

// A log's request body is stored as the bytes it shares with an earlier request body of its thread
// and the rest (sqlstore.BodyCache): logs.request_base names the earlier log, request_prefix the
// bytes shared, request_body holds the rest; a body with no base is whole (request_base ''). A row
// that is a base is never rewritten unless its dependents are first stored whole
// (tx.replaceLog).
//
// The writer keeps each thread's last request bodies, as stored (rowCache.bodies), used only while
// Store.wmu is held and kept true as the row cache is: log rows change only in a Tx of their
// thread, which updates the entry; every other write, a rolled-back batch and another connection's
// commit clear it.

// qBodyChain reads a log's request body and its bases, the log first, in one statement (one
// snapshot). Each row: the base's id ("" when stored whole), the bytes shared with it, the rest.
const qBodyChain = `WITH RECURSIVE chain(k, base, shared, rest) AS (
		SELECT 0, request_base, request_prefix, request_body FROM logs WHERE thread_num = ?1 AND id = ?2
		UNION ALL
		SELECT c.k + 1, l.request_base, l.request_prefix, l.request_body
		FROM chain c JOIN logs l ON l.thread_num = ?1 AND l.id = c.base
		WHERE c.base <> '' AND c.k <= 300
	) SELECT base, shared, rest FROM chain ORDER BY k`
