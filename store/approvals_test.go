package store

import (
	"context"
	"errors"
	"testing"

	"switchboard/groups"
)

// TestApprovalDecidedOnce: the first decision wins; a second changes
// nothing and sees who decided.
func TestApprovalDecidedOnce(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a, err := s.AddApproval(ctx, Approval{ID: NewApprovalID(), Folder: "main", TurnID: "t-1", Tool: "send", Args: `{"text":"hi"}`})
	if err != nil {
		t.Fatal(err)
	}
	if pend, _ := s.PendingApprovals(ctx); len(pend) != 1 || pend[0].ID != a.ID {
		t.Fatalf("pending = %+v", pend)
	}
	got, decided, err := s.DecideApproval(ctx, a.ID, ApprovalDenied, "web:user/ann", "no")
	if err != nil || !decided || got.Status != ApprovalDenied || got.Decider != "web:user/ann" {
		t.Fatalf("first decision: %+v %v %v", got, decided, err)
	}
	got, decided, err = s.DecideApproval(ctx, a.ID, ApprovalAllowed, "web:user/bob", "")
	if err != nil || decided || got.Status != ApprovalDenied || got.Decider != "web:user/ann" {
		t.Fatalf("second decision changed it: %+v %v %v", got, decided, err)
	}
	if _, _, err := s.DecideApproval(ctx, "nope", ApprovalAllowed, "cli", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if pend, _ := s.PendingApprovals(ctx); len(pend) != 0 {
		t.Errorf("still pending: %+v", pend)
	}
}

// TestSetApprovalMessage: where a request was posted is kept with it; an
// unknown id is an error, not a silent no-op.
func TestSetApprovalMessage(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a, err := s.AddApproval(ctx, Approval{ID: NewApprovalID(), Folder: "main", TurnID: "t-1", Tool: "send"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetApprovalMessage(ctx, a.ID, "web:lobby", "t", "m-1", true); err != nil {
		t.Fatal(err)
	}
	got, err := s.Approval(ctx, a.ID)
	if err != nil || got.Chat != "web:lobby" || got.Topic != "t" || got.MessageID != "m-1" || !got.Buttons {
		t.Errorf("approval after SetApprovalMessage: %+v %v", got, err)
	}
	if err := s.SetApprovalMessage(ctx, "appr-nope", "web:lobby", "", "m-2", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
}

// TestSessionAllows: "Allow for this session" covers the tool in the turn
// that granted it and in later turns of the same agent session, whether
// the granting turn resumed that session or began it; nothing else.
func TestSessionAllows(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	grant := func(turn, session, tool string) {
		t.Helper()
		a, err := s.AddApproval(ctx, Approval{ID: NewApprovalID(), Folder: "main", TurnID: turn, SessionID: session, Tool: tool})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.DecideApproval(ctx, a.ID, ApprovalSession, "web:user/ann", ""); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	grant("t-fresh", "", "send")   // a fresh session's first turn
	grant("t-2", "sess-b", "like") // a resumed session
	if _, err := s.w.ExecContext(ctx, `INSERT INTO turns (id, folder, chat_jid, trigger, started_ms, status, session_id) VALUES ('t-fresh', 'main', 'web:lobby', 'message', 1, 'ok', 'sess-a')`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		folder, tool, turn, session string
		want                        bool
	}{
		{"main", "send", "t-fresh", "", true},   // the granting turn itself
		{"main", "send", "t-3", "sess-a", true}, // a later turn of the session it began
		{"main", "send", "t-3", "sess-b", false},
		{"main", "send", "t-4", "", false}, // another fresh session
		{"main", "like", "t-5", "sess-b", true},
		{"main", "like", "t-5", "sess-a", false},
		{"other", "like", "t-5", "sess-b", false},
	} {
		if got, err := s.SessionAllows(ctx, groups.Folder(c.folder), c.tool, c.turn, c.session); err != nil || got != c.want {
			t.Errorf("SessionAllows(%s, %s, %s, %s) = %v %v, want %v", c.folder, c.tool, c.turn, c.session, got, err, c.want)
		}
	}
}
