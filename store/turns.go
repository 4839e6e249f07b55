package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// TurnStatus is how a turn ended.
type TurnStatus string

const (
	TurnSucceeded TurnStatus = "succeeded"
	TurnFailed    TurnStatus = "failed" // the agent failed or timed out (retried or given up)
	// TurnStopped: a person stopped the turn (/stop, the Stop button). It
	// is not retried; like a succeeded turn it consumes what its prompt
	// showed and keeps its session, which the next turn resumes.
	TurnStopped TurnStatus = "stopped"
)

// Turn is the record of one agent run.
type Turn struct {
	ID        string
	Folder    groups.Folder
	ChatJID   adapters.JID
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
	Usage     Usage
	// SessionReset: the folder's sessions were reset while the turn ran
	// (reset_session), so FinishBatch records SessionID with the turn but
	// does not keep it as the chat's session.
	SessionReset bool
}

// Usage is what a turn cost, as its agent reported it; zero when it
// reported nothing. Costs are kept in whole micro-dollars (money.go).
type Usage struct {
	CostUSD             float64
	InputTokens         int64
	OutputTokens        int64
	CacheCreationTokens int64
	CacheReadTokens     int64
	NumTurns            int64
	APIDuration         time.Duration
	// SessionCost is the session's running total the agent printed
	// (Claude Code's total_cost_usd), kept to work out the next turn's cost.
	SessionCost float64
}

const turnColumns = `id, folder, chat_jid, topic, trigger, task_id, run_id, attempt, started_ms, duration_ms,
		status, error, exit_code, session_id, cost_micros, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens,
		num_turns, api_ms, session_cost_micros`

func scanTurn(sc scanner) (Turn, error) {
	var t Turn
	u := &t.Usage
	err := sc.Scan(&t.ID, &t.Folder, &t.ChatJID, &t.Topic, &t.Trigger, &t.TaskID, &t.RunID, &t.Attempt, msTime(&t.Started),
		msDuration(&t.Duration), &t.Status, &t.Error, &t.ExitCode, &t.SessionID, usdMicros(&u.CostUSD), &u.InputTokens, &u.OutputTokens,
		&u.CacheCreationTokens, &u.CacheReadTokens, &u.NumTurns, msDuration(&u.APIDuration), usdMicros(&u.SessionCost))
	return t, err
}

// Turns returns folder's most recent turn records, newest first.
func (s *Store) Turns(ctx context.Context, folder groups.Folder, limit int) ([]Turn, error) {
	if folder == "" { // TurnsPage reads every folder's for ""; a group's view never does
		return nil, errors.New("turns: no folder given (every folder's turns are TurnsPage's, for the operator)")
	}
	ts, _, err := s.TurnsPage(ctx, folder, "", clampLimit(limit))
	return ts, err
}

// SessionCost is the running total the last turn of folder in session
// reported (Usage.SessionCost), or 0.
func (s *Store) SessionCost(ctx context.Context, folder groups.Folder, session string) (float64, error) {
	if session == "" {
		return 0, nil
	}
	var c float64
	err := s.r.QueryRowContext(ctx, `SELECT session_cost_micros FROM turns WHERE folder = ? AND session_id = ? AND session_cost_micros > 0
		ORDER BY started_ms DESC, rowid DESC LIMIT 1`, folder, session).Scan(usdMicros(&c))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read session cost of %s: %w", folder, err)
	}
	return c, nil
}

// SessionTokens sums the tokens the turns of folder in session recorded:
// what an agent that prints its session's running total (Codex) had
// already been charged.
func (s *Store) SessionTokens(ctx context.Context, folder groups.Folder, session string) (Usage, error) {
	var u Usage
	if session == "" {
		return u, nil
	}
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
		COALESCE(SUM(cache_creation_tokens), 0), COALESCE(SUM(cache_read_tokens), 0) FROM turns WHERE folder = ? AND session_id = ?`,
		folder, session).Scan(&u.InputTokens, &u.OutputTokens, &u.CacheCreationTokens, &u.CacheReadTokens)
	if err != nil {
		return Usage{}, fmt.Errorf("read session tokens of %s: %w", folder, err)
	}
	return u, nil
}
