package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"switchboard/store"
)

// The checks that may hold a turn run at two moments.
//
// At Deliver (intake.go), around storing a new message:
//   - the loop guard refuses a web post from this machine that would open
//     one new room too many (loopGuard.refuse, before the message is
//     stored), and notes how each web trigger arrived (loopGuard.arrived);
//   - the flood guard lifts a hold that only other senders' flood set
//     (floodGuard.arrived).
//
// When a turn is about to start (turns.prepare), and when a message is
// to be steered into a running turn (midTurns.steer: checked as the turn
// it would start, so a chat cannot push messages past them into a running
// agent), the turnGuards, in this order; the first that holds the turn
// wins:
//  1. owner  (guard_owner.go): a group's task run whose chat its subtree
//     no longer owns is skipped;
//  2. chain  (guard_chain.go): work agents queued for each other deeper
//     than Limits.MaxChain is recorded as a failed turn, not run;
//  3. budget (guard_budget.go): a used-up budget holds the chat (or skips a
//     task run);
//  4. flood  (guard_flood.go): a flood limit holds the chat;
//  5. loop   (guard_loop.go): the web-room loop guard pauses the room.
//
// The flood and loop counts are taken last, so a turn a budget holds is
// counted by neither. Budgets also act outside a turn: the scheduler's
// fires skip task runs a budget holds (budgetGuard.skipHeld), and every
// reload lets the chats run that a budget no longer holds
// (budgetGuard.load). The flood, loop and budget guards hold a chat
// through one chatHolder (guard_hold.go).

// turnCandidate is a batch about to run as turn.
type turnCandidate struct {
	batch store.Batch
	turn  store.Turn // its id and attempt; the chain guard records it
}

// verdict is what a turn guard decided.
type verdict int

const (
	verdictRun  verdict = iota // the turn may run, as far as this guard goes
	verdictHeld                // the turn does not run now; the guard has acted (held, skipped or recorded it)
)

// turnGuard is one check that may hold a turn about to start. check
// returns an error when it could not do what it decided; the verdict
// still says whether the turn runs.
type turnGuard interface {
	check(ctx context.Context, c turnCandidate) (verdict, error)
}

// turnGuards applies its guards in order until one holds the turn.
type turnGuards struct {
	list []turnGuard
	log  *slog.Logger
}

// withheld reports whether c's turn is not to run now. A guard's error is
// logged here; its verdict stands.
func (gs turnGuards) withheld(ctx context.Context, c turnCandidate) bool {
	for _, g := range gs.list {
		v, err := g.check(ctx, c)
		if err != nil {
			gs.log.Error("turn guard", "folder", c.batch.Folder, "jid", c.batch.ChatJID, "held", v == verdictHeld, "err", err)
		}
		if v == verdictHeld {
			return true
		}
	}
	return false
}

// clockTime formats t for a chat notice, in zone.
func clockTime(t time.Time, zone *time.Location) string {
	return t.In(zone).Format("15:04 MST")
}

// count writes n things: "1 turn", "2 turns".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// spell writes a window the way people say it: "minute", "10 minutes".
func spell(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return count(int(d/u.d), u.name)
		}
	}
	return d.String()
}
