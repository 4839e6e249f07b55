package store

import "errors"

// Sentinel errors. Callers test them with errors.Is; the returned errors wrap
// them with the operation and the key that failed.
var (
	// ErrNotFound: no row has that key (message, group, route).
	ErrNotFound = errors.New("not found")
	// ErrExists: a row with that key is already stored (AddGroup).
	ErrExists = errors.New("already exists")
	// ErrSchemaTooNew: the database was migrated by a newer switchboard than
	// this binary; opening it could corrupt data the newer schema relies on.
	ErrSchemaTooNew = errors.New("database schema too new")
	// ErrBadQuery: a search query is not valid FTS5 syntax.
	ErrBadQuery = errors.New("bad search query")
	// ErrTaskFinished: a cancelled or completed task cannot change status.
	ErrTaskFinished = errors.New("task is finished")
	// ErrBatchGone: work rows of a loaded batch were dropped before its
	// turn started (a task cancelled or paused, a group removed): the
	// turn must not run; load the next batch instead (MarkStarted).
	ErrBatchGone = errors.New("the batch's work was dropped before its turn started")
	// ErrNoFTS5: the binary was built without the sqlite_fts5 tag.
	ErrNoFTS5 = errors.New("sqlite was built without fts5")
	// ErrNotSwitchboard: the file is an SQLite database of something else.
	ErrNotSwitchboard = errors.New("not a switchboard database")
	// ErrInvalidMessage: a message lacks the chat JID or platform id that
	// make up its identity; storing it would merge it with other messages.
	ErrInvalidMessage = errors.New("invalid message")
	// ErrBadCost: a turn's cost is negative, not finite or absurd; the
	// caller checks usage before it records it (agent.Usage.Checked).
	ErrBadCost = errors.New("bad cost")
)
