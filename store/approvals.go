package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// Approvals: requests that an ask rule ('?' in grants) or approve_tool
// made, and their decisions. The gateway adds and decides them; the CLI
// decides them too (switchboard approvals allow|deny), through the same
// conditional update: the first decision wins.

// ApprovalStatus is where an approval request stands.
type ApprovalStatus string

// Approval statuses: pending until decided, then one of the others for good.
const (
	ApprovalPending ApprovalStatus = "pending"
	ApprovalAllowed ApprovalStatus = "allowed" // allow once
	ApprovalSession ApprovalStatus = "session" // allow the tool for the rest of the agent session
	ApprovalDenied  ApprovalStatus = "denied"  // by a person (or at once: no approvers)
	ApprovalTimeout ApprovalStatus = "timeout" // nobody decided within approvals.timeout
	ApprovalExpired ApprovalStatus = "expired" // the call ended first (turn over, stopped, gateway restarted)
)

// Allows reports whether the status lets the call run.
func (s ApprovalStatus) Allows() bool { return s == ApprovalAllowed || s == ApprovalSession }

// Approval is one approval request.
type Approval struct {
	ID        string
	Folder    groups.Folder
	TurnID    string
	SessionID string // the agent session the turn resumed ("" for a fresh one)
	Tool      string
	Args      string // the arguments as shown to approvers (redacted)
	Chat      adapters.JID
	Topic     string
	MessageID adapters.MessageID // the request message, once posted
	Buttons   bool               // posted with buttons
	Status    ApprovalStatus
	Decider   string // who decided: a JID, "cli", or "" for the gateway
	Reason    string
	Created   time.Time
	Decided   time.Time
}

const approvalCols = `id, folder, turn_id, session_id, tool, args, chat_jid, topic, message_id, buttons, status, decider, reason, created_ms, decided_ms`

func scanApproval(sc scanner) (Approval, error) {
	var a Approval
	err := sc.Scan(&a.ID, &a.Folder, &a.TurnID, &a.SessionID, &a.Tool, &a.Args, &a.Chat, &a.Topic, &a.MessageID, &a.Buttons,
		&a.Status, &a.Decider, &a.Reason, msTime(&a.Created), msTime(&a.Decided))
	return a, err
}

// approvalAlphabet has no look-alikes (0/o, 1/l): IDs are typed in /approve.
const approvalAlphabet = "abcdefghijkmnpqrstuvwxyz23456789"

// NewApprovalID is a short random id a person can type: 7 characters.
func NewApprovalID() string {
	var b [7]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = approvalAlphabet[int(b[i])%len(approvalAlphabet)]
	}
	return string(b[:])
}

// AddApproval stores a pending request (Status and Created are set here
// when empty) and returns it.
func (s *Store) AddApproval(ctx context.Context, a Approval) (Approval, error) {
	if a.Status == "" {
		a.Status = ApprovalPending
	}
	if a.Created.IsZero() {
		a.Created = s.now()
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO approvals (`+approvalCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.Folder, a.TurnID, a.SessionID, a.Tool, a.Args, a.Chat, a.Topic, a.MessageID, a.Buttons,
		a.Status, a.Decider, a.Reason, toMS(a.Created), toMS(a.Decided))
	if err != nil {
		return Approval{}, fmt.Errorf("add approval %s for %s: %w", a.ID, a.Folder, err)
	}
	return a, nil
}

// SetApprovalMessage records where the request was posted (ErrNotFound
// when no request has that id).
func (s *Store) SetApprovalMessage(ctx context.Context, id string, chat adapters.JID, topic string, msg adapters.MessageID, buttons bool) error {
	res, err := s.w.ExecContext(ctx, `UPDATE approvals SET chat_jid = ?, topic = ?, message_id = ?, buttons = ? WHERE id = ?`,
		chat, topic, msg, buttons, id)
	if err != nil {
		return fmt.Errorf("record approval %s message: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("record approval %s message: %w", id, ErrNotFound)
	}
	return nil
}

// Approval returns one request (ErrNotFound when no request has that id).
func (s *Store) Approval(ctx context.Context, id string) (Approval, error) {
	a, err := scanApproval(s.r.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, fmt.Errorf("approval %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Approval{}, fmt.Errorf("read approval %s: %w", id, err)
	}
	return a, nil
}

// DecideApproval decides a pending request: status (not pending), who
// decided and why. decided is false, and nothing changes, when the request
// was no longer pending; a is then the request as decided before. A
// session decision also stores the session grant, in the same transaction.
// An unknown id is ErrNotFound.
func (s *Store) DecideApproval(ctx context.Context, id string, status ApprovalStatus, decider, reason string) (a Approval, decided bool, err error) {
	err = writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decider = ?, reason = ?, decided_ms = ? WHERE id = ? AND status = 'pending'`,
			status, decider, reason, now, id)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		decided = n == 1
		a, err = scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil || !decided || status != ApprovalSession {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approval_grants (approval_id, folder, tool, turn_id, session_id, created_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			a.ID, a.Folder, a.Tool, a.TurnID, a.SessionID, now)
		return err
	})
	if err != nil {
		return Approval{}, false, fmt.Errorf("decide approval %s: %w", id, err)
	}
	return a, decided, nil
}

// SessionAllows reports whether "Allow for this session" covers a call of
// tool by folder's turn, which resumed session ("" for a fresh one): a
// grant made in this turn, in session, or in a turn that began session.
func (s *Store) SessionAllows(ctx context.Context, folder groups.Folder, tool, turn, session string) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM approval_grants g WHERE g.folder = ? AND g.tool = ? AND (
		(g.turn_id != '' AND g.turn_id = ?) OR
		(? != '' AND (g.session_id = ? OR g.turn_id IN (SELECT id FROM turns WHERE folder = ? AND session_id = ?))))`,
		folder, tool, turn, session, session, folder, session).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read session grants of %s: %w", folder, err)
	}
	return n > 0, nil
}

// PendingApprovals lists the pending requests, oldest first.
func (s *Store) PendingApprovals(ctx context.Context) ([]Approval, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE status = 'pending' ORDER BY created_ms, id`)
	out, err := collect(rows, err, scanApproval)
	if err != nil {
		return nil, fmt.Errorf("read pending approvals: %w", err)
	}
	return out, nil
}

// Approvals lists up to limit requests, newest first.
func (s *Store) Approvals(ctx context.Context, limit int) ([]Approval, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals ORDER BY created_ms DESC, id DESC LIMIT ?`, limit)
	out, err := collect(rows, err, scanApproval)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	return out, nil
}

// ApproversOf returns the approvers stored for folder; set is false when
// none are stored (the config's, or the parent's, apply).
func (s *Store) ApproversOf(ctx context.Context, folder groups.Folder) (jids []string, set bool, err error) {
	jids, err = queryStrings(ctx, s.r, `SELECT jid FROM approvers WHERE folder = ? ORDER BY position`, folder)
	if err != nil {
		return nil, false, fmt.Errorf("read approvers of %s: %w", folder, err)
	}
	return jids, len(jids) > 0, nil
}

// SetApprovers replaces folder's stored approvers; none clears them.
func (s *Store) SetApprovers(ctx context.Context, folder groups.Folder, jids []string) error {
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM approvers WHERE folder = ?`, folder); err != nil {
			return err
		}
		for i, j := range jids {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO approvers (folder, jid, position) VALUES (?, ?, ?)`, folder, j, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set approvers of %s: %w", folder, err)
	}
	return nil
}
