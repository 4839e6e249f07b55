package store

import (
	"database/sql"
	"errors"

	"github.com/mattn/go-sqlite3"
)

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

// Permanent reports whether a write failed in a way that trying it again
// cannot change: a constraint the row breaks (SQLite's CONSTRAINT,
// MISMATCH, TOOBIG, RANGE), a row that is gone (ErrNotFound), a value
// refused (ErrInvalidMessage, ErrBadCost). A full disk, a busy or locked
// database, an I/O error or an ended ctx may pass and are not permanent.
// Callers that retry a write until the store takes it stop on these.
func Permanent(err error) bool {
	if errors.Is(err, ErrNotFound) || errors.Is(err, sql.ErrNoRows) || errors.Is(err, ErrInvalidMessage) || errors.Is(err, ErrBadCost) {
		return true
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case sqlite3.ErrConstraint, sqlite3.ErrMismatch, sqlite3.ErrTooBig, sqlite3.ErrRange:
		return true
	}
	return false
}
