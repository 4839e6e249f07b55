package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"switchboard/agent"
	"switchboard/groups"
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
	m  map[groups.Folder][]store.Interrupted
	// runs are their registrations for /stop and the Stop button, by turn
	// id, until their folders' workers take them (awaitTurn).
	runs map[string]stopHandle
}

// recoverStarted settles what a stopped gateway's running turns left in
// the store: turns to await (with a Reattacher, those with an id) are kept
// for their folders' workers, every other one counts as a crashed attempt.
// It returns the ids of the kept turns.
func (t *turns) recoverStarted(ctx context.Context) ([]string, error) {
	its, err := t.st.InterruptedTurns(ctx)
	if err != nil {
		return nil, err
	}
	var keep []string
	if _, ok := t.runner.(agent.Reattacher); ok {
		// Each registered now, before the adapters start: a /stop (or an
		// interrupting message) that comes before its folder's worker
		// gets to it stops it, as it would a running turn.
		keep = t.interrupted.set(its, func(it store.Interrupted) stopHandle {
			return t.running.begin(context.WithoutCancel(ctx), it.TurnID, store.Batch{Folder: it.Folder, ChatJID: it.ChatJID, Topic: it.Topic})
		})
		if len(keep) > 0 {
			t.log.Warn("turns interrupted by a stop are awaited on their workers", "turns", len(keep))
		}
	}
	if err := t.settleAnswered(ctx, its, keep); err != nil {
		return nil, err
	}
	n, err := t.st.RecoverStarted(ctx, keep...)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		t.log.Warn("turns interrupted by a crash count as failed attempts", "work_rows", n)
	}
	return keep, nil
}

// errAnsweredBeforeCrash is the error recorded for a turn that a crash
// interrupted after its agent had answered its chat through a tool.
const errAnsweredBeforeCrash = "interrupted by a gateway crash after it had replied through a tool; not run again, so the chat is not answered twice"

// errAnsweredBeforeFailure is added to the error recorded for a failed
// turn whose agent had already answered its chat through a tool.
const errAnsweredBeforeFailure = "it had replied through a tool; not run again, so the chat is not answered twice"

// settleAnswered records as answered each batch whose turn a crash
// interrupted (one of its, its rows still started, its turn not in keep: nothing will
// report its outcome) after the turn's agent had already queued a message
// to the batch's chat through a tool (reply, send, send_file): the chat has
// its answer, and a run again would answer the same messages a second
// time (CONTRACT §8: each reply at most once). The turn is recorded
// failed with errAnsweredBeforeCrash and its batch consumed, as
// recordAwaited does with what an awaited turn sent; every other
// interrupted batch runs again (RecoverStarted).
func (t *turns) settleAnswered(ctx context.Context, its []store.Interrupted, keep []string) error {
	for _, it := range its {
		if it.TurnID == "" || slices.Contains(keep, it.TurnID) {
			continue
		}
		b, ok, err := t.st.StartedBatch(ctx, it.TurnID)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		chats, err := t.st.OutboxChatsSince(ctx, b.Folder, mcpKeyPrefix, it.Started)
		if err != nil {
			return err
		}
		if !slices.Contains(chats, b.ChatJID) {
			continue
		}
		first := b.Items[0]
		turn := store.Turn{ID: it.TurnID, Folder: b.Folder, ChatJID: b.ChatJID, Topic: b.Topic, Trigger: first.Trigger,
			TaskID: first.TaskID, RunID: first.RunID, Attempt: first.Attempts + first.Crashes + 1, Started: it.Started,
			Status: store.TurnFailed, Error: errAnsweredBeforeCrash}
		if err := t.st.FinishBatch(ctx, b, turn, nil, time.Time{}); err != nil {
			return err
		}
		t.metrics.turns.WithLabelValues(string(first.Trigger), string(store.TurnFailed)).Inc()
		t.log.Warn("turn interrupted by a crash had already replied through a tool; not run again", "folder", b.Folder,
			"jid", b.ChatJID, "turn", it.TurnID, "messages", len(b.Messages))
	}
	return nil
}

// nextInterrupted takes folder's next turn to await, if any.
func (t *turns) nextInterrupted(folder groups.Folder) (store.Interrupted, bool) {
	return t.interrupted.next(folder)
}

// set keeps the turns of its that have an id, by folder, each with the
// registration register makes of it, and returns their ids.
func (in *interrupted) set(its []store.Interrupted, register func(store.Interrupted) stopHandle) (ids []string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.m, in.runs = map[groups.Folder][]store.Interrupted{}, map[string]stopHandle{}
	for _, it := range its {
		if it.TurnID == "" {
			continue
		}
		ids = append(ids, it.TurnID)
		in.m[it.Folder] = append(in.m[it.Folder], it)
		in.runs[it.TurnID] = register(it)
	}
	return ids
}

// next takes folder's next turn to await, if any.
func (in *interrupted) next(folder groups.Folder) (store.Interrupted, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	its := in.m[folder]
	if len(its) == 0 {
		return store.Interrupted{}, false
	}
	if len(its) == 1 {
		delete(in.m, folder)
	} else {
		in.m[folder] = its[1:]
	}
	return its[0], true
}

// requeue puts it back first in its folder's turns to await, with run,
// its registration (zero: none; the next try registers it anew).
func (in *interrupted) requeue(it store.Interrupted, run stopHandle) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.m[it.Folder] = append([]store.Interrupted{it}, in.m[it.Folder]...)
	if run.rt != nil {
		in.runs[it.TurnID] = run
	}
}

// registration takes turn's registration, if it has one.
func (in *interrupted) registration(turn string) (stopHandle, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	run, ok := in.runs[turn]
	delete(in.runs, turn)
	return run, ok
}

// awaitTurn awaits the outcome of a turn a stopped gateway started and
// records it; an outcome that never came counts as a crashed attempt. It
// returns the folder's backoff, as runTurn.
func (t *turns) awaitTurn(ctx context.Context, it store.Interrupted) time.Duration {
	if h := t.hooks; h != nil && h.awaitStart != nil {
		h.awaitStart(it.TurnID)
	}
	// Registered (/stop, the Stop button) since the start (recoverStarted),
	// or since an earlier try that failed to read it: a stop that came
	// meanwhile stops it now, its worker told as any awaited turn's is.
	run, ok := t.interrupted.registration(it.TurnID)
	if ok {
		run = run.under(ctx)
	} else {
		run = t.running.begin(ctx, it.TurnID, store.Batch{Folder: it.Folder, ChatJID: it.ChatJID, Topic: it.Topic})
	}
	if h := t.hooks; h != nil && h.awaitRead != nil {
		h.awaitRead(it.TurnID)
	}
	b, ok, err := t.st.StartedBatch(ctx, it.TurnID)
	if err != nil {
		if ctx.Err() == nil {
			t.log.Error("load interrupted turn", "folder", it.Folder, "turn", it.TurnID, "err", err)
		}
		t.interrupted.requeue(it, run) // still registered: a stop that came stays
		return time.Second
	}
	if !ok {
		run.end()
		return 0
	}
	run = run.answering(b)
	first := b.Items[0]
	turn := store.Turn{ID: it.TurnID, Folder: b.Folder, ChatJID: b.ChatJID, Topic: b.Topic, Trigger: first.Trigger,
		TaskID: first.TaskID, RunID: first.RunID, Attempt: first.Attempts + first.Crashes + 1, Started: it.Started}
	session := ""
	if !isolatedTurn(b) {
		if session, err = t.st.Session(ctx, b.Folder, b.ChatJID, b.Topic); err != nil {
			if ctx.Err() == nil {
				t.log.Error("load session", "folder", b.Folder, "err", err)
			}
			t.interrupted.requeue(it, run)
			return time.Second
		}
	}
	t.log.Info("awaiting the outcome of a turn interrupted by a stop", "folder", b.Folder, "jid", b.ChatJID, "turn", turn.ID,
		"started", it.Started)
	t.active.started(turn.ID, b) // its agent may still call its tools
	res, err := t.runner.(agent.Reattacher).Await(run.ctx, agent.TurnID(turn.ID), it.Started.Add(t.agent.Timeout))
	return t.recordAwaited(ctx, it, preparedTurn{b: b, turn: turn, session: session}, res, err, run.end())
}

// recordAwaited records the outcome of the awaited turn it (p, ended as
// end says), as recordTurn, recordStopped or, interrupted by a message,
// recordInterrupted (its whole batch runs again with that message); one
// that never came counts as a crashed attempt unless someone stopped it. An outcome records the turn
// without the messages steered into it that its agent did not take
// (withoutUntaken). An outcome that says the turn was stopped
// (agent.ErrStopped: by the gateway before the restart) records it
// stopped. It returns the folder's backoff, as runTurn.
func (t *turns) recordAwaited(ctx context.Context, it store.Interrupted, p preparedTurn, res agent.Result, err error, end turnEnd) time.Duration {
	b, turn := p.b, p.turn
	// Stopped, it is not run again, even when no outcome of it comes.
	if end.by != "" && err != nil && ctx.Err() == nil {
		if end.requeue {
			return t.recordInterrupted(ctx, p, res, end.by)
		}
		p.b = t.withoutUntaken(ctx, b, res.Steered)
		return t.recordStopped(ctx, p, res, err, end.by, nil)
	}
	if errors.Is(err, agent.ErrStopped) && ctx.Err() == nil {
		// Stopped by the gateway before the restart, whose stop left the
		// turn to this one (it stopped before it recorded the turn): as
		// that gateway would have recorded it.
		p.b = t.withoutUntaken(ctx, b, res.Steered)
		return t.recordStopped(ctx, p, res, err, "", nil)
	}
	if errors.Is(err, agent.ErrNoOutcome) {
		t.active.finished(turn.ID)
		if _, rerr := t.st.RecoverTurn(context.WithoutCancel(ctx), turn.ID); rerr != nil {
			t.log.Error("record interrupted turn", "folder", b.Folder, "turn", turn.ID, "err", rerr)
			t.interrupted.requeue(it, stopHandle{}) // its rows are still started: not a new batch
			return time.Second
		}
		t.log.Warn("interrupted turn's outcome never came; counted as a crashed attempt", "folder", b.Folder, "turn", turn.ID, "err", err)
		return 0
	}
	// What the agent sent through its tools before the stop answered those
	// chats, as markReplied records it while a turn runs: its stdout reply
	// is not sent to them as well.
	chats, cerr := t.st.OutboxChatsSince(context.WithoutCancel(ctx), b.Folder, mcpKeyPrefix, it.Started)
	if cerr != nil {
		t.log.Error("read what an interrupted turn sent", "folder", b.Folder, "turn", turn.ID, "err", cerr)
	}
	for _, c := range chats {
		t.active.markReplied(b.Folder, c)
	}
	if err == nil || ctx.Err() == nil {
		// An outcome came (a shutdown first leaves the turn, every row
		// of it still started, to the next start's await).
		b = t.withoutUntaken(ctx, b, res.Steered)
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, agent.ErrFailed) {
		err = fmt.Errorf("%w: %v", agent.ErrFailed, err)
	}
	return t.recordTurn(ctx, b, turn, p.session, res, err, nil)
}
