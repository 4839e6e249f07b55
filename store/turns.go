package store

import (
	"context"
	"fmt"
	"time"
)

// TurnStatus is how a turn ended.
type TurnStatus string

const (
	TurnSucceeded TurnStatus = "succeeded"
	TurnFailed    TurnStatus = "failed" // the agent failed or timed out (retried or given up)
)

// Turn is the record of one agent run.
type Turn struct {
	ID        string
	Folder    string
	ChatJID   string
	Topic     string
	Trigger   Trigger
	TaskID    int64
	RunID     int64
	Attempt   int
	Started   time.Time
	Duration  time.Duration
	Status    TurnStatus
	Error     string
	ExitCode  int
	SessionID string
}

// Turns returns folder's most recent turn records, newest first.
func (s *Store) Turns(ctx context.Context, folder string, limit int) ([]Turn, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, folder, chat_jid, topic, trigger, task_id, run_id, attempt, started_ms, duration_ms,
		status, error, exit_code, session_id FROM turns WHERE folder = ? ORDER BY started_ms DESC, rowid DESC LIMIT ?`, folder, clampLimit(limit))
	out, err := collect(rows, err, func(sc scanner) (Turn, error) {
		var t Turn
		err := sc.Scan(&t.ID, &t.Folder, &t.ChatJID, &t.Topic, &t.Trigger, &t.TaskID, &t.RunID, &t.Attempt, msTime(&t.Started),
			msDuration(&t.Duration), &t.Status, &t.Error, &t.ExitCode, &t.SessionID)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read turns: %w", err)
	}
	return out, nil
}
