package gateway

import (
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/store"
)

// activeTurn is a running turn as the MCP tools see it: which batch it
// answers and which chats it already replied to through a tool.
type activeTurn struct {
	batch   store.Batch
	replied map[adapters.JID]bool
	usage   agent.Usage // reported over MCP (report_usage) so far
	// sessionsReset: reset_session ran while the turn did, so the session
	// it ran in is recorded but not kept for the chat's next turn.
	sessionsReset bool
	// What an approval waits with (approvals.go): the session the turn
	// resumed, its deadline (zero: none) and done, closed when it ends.
	session  string
	deadline time.Time
	done     chan struct{}
}

// turnRun is a running turn as an approval sees it.
type turnRun struct {
	id, session string
	chat        adapters.JID
	topic       string
	deadline    time.Time
	done        <-chan struct{} // nil when no turn runs: never closed
}

// activeTurns are the running turns, by id (one per folder): what the
// MCP tools act on and the loop and chain guards look at.
type activeTurns struct {
	mu sync.Mutex
	m  map[string]*activeTurn
}

func (a *activeTurns) started(id string, b store.Batch) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]*activeTurn{}
	}
	a.m[id] = &activeTurn{batch: b, replied: map[adapters.JID]bool{}, done: make(chan struct{})}
}

// setRun records the session turn id resumed and its deadline.
func (a *activeTurns) setRun(id, session string, deadline time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.m[id]; t != nil {
		t.session, t.deadline = session, deadline
	}
}

// runOf returns folder's running turn as an approval waits with it.
func (a *activeTurns) runOf(folder groups.Folder) (turnRun, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, t := range a.m {
		if t.batch.Folder == folder {
			return turnRun{id: id, session: t.session, chat: t.batch.ChatJID, topic: t.batch.Topic, deadline: t.deadline, done: t.done}, true
		}
	}
	return turnRun{}, false
}

// finished forgets the turn and returns the chats it replied to via MCP,
// and whether its folder's sessions were reset while it ran.
func (a *activeTurns) finished(id string) (replied map[adapters.JID]bool, sessionsReset bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.m[id]
	delete(a.m, id)
	if t == nil {
		return nil, false
	}
	close(t.done)
	return t.replied, t.sessionsReset
}

// resetSessions notes that folder's sessions were reset: its running turn
// (resuming one, or about to report one) must not store its session again.
func (a *activeTurns) resetSessions(folder groups.Folder) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.m {
		if t.batch.Folder == folder {
			t.sessionsReset = true
		}
	}
}

// running returns the running turn of folder, if any (one per folder).
func (a *activeTurns) running(folder groups.Folder) (string, *activeTurn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, t := range a.m {
		if t.batch.Folder == folder {
			return id, t
		}
	}
	return "", nil
}

// markReplied records that folder's running turn sent to chat, so its
// stdout reply to that chat is not sent as well.
func (a *activeTurns) markReplied(folder groups.Folder, chat adapters.JID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.m {
		if t.batch.Folder == folder {
			t.replied[chat] = true
		}
	}
}

// reported is what the running turn id reported over MCP.
func (a *activeTurns) reported(id string) agent.Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.m[id]; t != nil {
		return t.usage
	}
	return agent.Usage{}
}

// report adds u to folder's running turn; false when folder runs none.
func (a *activeTurns) report(folder groups.Folder, u agent.Usage) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.m {
		if t.batch.Folder == folder {
			t.usage = t.usage.Add(u)
			return true
		}
	}
	return false
}

// chainOf is the depth of work that a turn of folder queues now
// (delegate_group, escalate_group, inject_message): one more than the
// running turn's (1 when none runs).
func (a *activeTurns) chainOf(folder groups.Folder) int {
	if _, t := a.running(folder); t != nil {
		return chainDepth(t.batch) + 1
	}
	return 1
}
