package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"switchboard/agent"
	"switchboard/store"
)

// Turns a stopped gateway left running elsewhere: with a runner whose
// turns outlive the gateway (agent.Reattacher: remote workers), a turn
// interrupted by a stop or crash is not counted as a crashed attempt at
// start. Its folder's worker first awaits the turn's outcome and records
// it like any finished turn (recordTurn), for exactly the work rows the
// turn started on; only an outcome that never comes counts as a crash.
// Meanwhile the folder runs nothing else (one turn per folder).

// interrupted holds the turns to await, by folder, oldest first.
type interrupted struct {
	mu sync.Mutex
	m  map[string][]store.Interrupted
}

// recoverStarted settles what a stopped gateway's running turns left in
// the store: turns to await (with a Reattacher, those with an id) are kept
// for their folders' workers, every other one counts as a crashed attempt.
// It returns the ids of the kept turns.
func (g *Gateway) recoverStarted(ctx context.Context) ([]string, error) {
	var keep []string
	if _, ok := g.opt.Runner.(agent.Reattacher); ok {
		its, err := g.st.InterruptedTurns(ctx)
		if err != nil {
			return nil, err
		}
		g.interrupted.mu.Lock()
		g.interrupted.m = map[string][]store.Interrupted{}
		for _, it := range its {
			if it.TurnID == "" {
				continue
			}
			keep = append(keep, it.TurnID)
			g.interrupted.m[it.Folder] = append(g.interrupted.m[it.Folder], it)
		}
		g.interrupted.mu.Unlock()
		if len(keep) > 0 {
			g.log.Warn("turns interrupted by a stop are awaited on their workers", "turns", len(keep))
		}
	}
	n, err := g.st.RecoverStarted(ctx, keep...)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		g.log.Warn("turns interrupted by a crash count as failed attempts", "work_rows", n)
	}
	return keep, nil
}

// nextInterrupted takes folder's next turn to await, if any.
func (g *Gateway) nextInterrupted(folder string) (store.Interrupted, bool) {
	g.interrupted.mu.Lock()
	defer g.interrupted.mu.Unlock()
	its := g.interrupted.m[folder]
	if len(its) == 0 {
		return store.Interrupted{}, false
	}
	if len(its) == 1 {
		delete(g.interrupted.m, folder)
	} else {
		g.interrupted.m[folder] = its[1:]
	}
	return its[0], true
}

// requeueInterrupted puts it back first in its folder's turns to await.
func (g *Gateway) requeueInterrupted(it store.Interrupted) {
	g.interrupted.mu.Lock()
	defer g.interrupted.mu.Unlock()
	g.interrupted.m[it.Folder] = append([]store.Interrupted{it}, g.interrupted.m[it.Folder]...)
}

// awaitTurn awaits the outcome of a turn a stopped gateway started and
// records it; an outcome that never came counts as a crashed attempt. It
// returns the folder's backoff, as runTurn.
func (g *Gateway) awaitTurn(ctx context.Context, it store.Interrupted) time.Duration {
	b, ok, err := g.st.StartedBatch(ctx, it.TurnID)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("load interrupted turn", "folder", it.Folder, "turn", it.TurnID, "err", err)
		}
		g.requeueInterrupted(it)
		return time.Second
	}
	if !ok {
		return 0
	}
	first := b.Items[0]
	turn := store.Turn{ID: it.TurnID, Folder: b.Folder, ChatJID: b.ChatJID, Topic: b.Topic, Trigger: first.Trigger,
		TaskID: first.TaskID, RunID: first.RunID, Attempt: first.Attempts + first.Crashes + 1, Started: it.Started}
	session := ""
	if !isolatedTurn(b) {
		if session, err = g.st.Session(ctx, b.Folder, b.ChatJID, b.Topic); err != nil {
			if ctx.Err() == nil {
				g.log.Error("load session", "folder", b.Folder, "err", err)
			}
			g.requeueInterrupted(it)
			return time.Second
		}
	}
	g.log.Info("awaiting the outcome of a turn interrupted by a stop", "folder", b.Folder, "jid", b.ChatJID, "turn", turn.ID,
		"started", it.Started)
	g.turnStarted(turn.ID, b) // its agent may still call its tools
	res, err := g.opt.Runner.(agent.Reattacher).Await(ctx, turn.ID, it.Started.Add(g.opt.Agent.Timeout))
	if errors.Is(err, agent.ErrNoOutcome) {
		g.turnFinished(turn.ID)
		if _, rerr := g.st.RecoverTurn(context.WithoutCancel(ctx), turn.ID); rerr != nil {
			g.log.Error("record interrupted turn", "folder", b.Folder, "turn", turn.ID, "err", rerr)
			g.requeueInterrupted(it) // its rows are still started: not a new batch
			return time.Second
		}
		g.log.Warn("interrupted turn's outcome never came; counted as a crashed attempt", "folder", b.Folder, "turn", turn.ID, "err", err)
		return 0
	}
	// What the agent sent through its tools before the stop answered those
	// chats, as markReplied records it while a turn runs: its stdout reply
	// is not sent to them as well.
	chats, cerr := g.st.OutboxChatsSince(context.WithoutCancel(ctx), b.Folder, mcpKeyPrefix, it.Started)
	if cerr != nil {
		g.log.Error("read what an interrupted turn sent", "folder", b.Folder, "turn", turn.ID, "err", cerr)
	}
	for _, c := range chats {
		g.markReplied(b.Folder, c)
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, agent.ErrFailed) {
		err = fmt.Errorf("%w: %v", agent.ErrFailed, err)
	}
	return g.recordTurn(ctx, b, turn, session, res, err)
}
