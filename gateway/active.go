package gateway

import (
	"sync"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/store"
)

// activeTurn is a running turn as the MCP tools see it: which batch it
// answers and which chats it already replied to through a tool.
type activeTurn struct {
	batch   store.Batch
	replied map[adapters.JID]bool
	usage   agent.Usage // reported over MCP (report_usage) so far
}

type activeTurns struct {
	mu sync.Mutex
	m  map[string]*activeTurn
}

func (g *Gateway) turnStarted(id string, b store.Batch) {
	g.active.mu.Lock()
	defer g.active.mu.Unlock()
	if g.active.m == nil {
		g.active.m = map[string]*activeTurn{}
	}
	g.active.m[id] = &activeTurn{batch: b, replied: map[adapters.JID]bool{}}
}

// turnFinished forgets the turn and returns the chats it replied to via MCP.
func (g *Gateway) turnFinished(id string) map[adapters.JID]bool {
	g.active.mu.Lock()
	defer g.active.mu.Unlock()
	t := g.active.m[id]
	delete(g.active.m, id)
	if t == nil {
		return nil
	}
	return t.replied
}

// runningTurn returns the running turn of folder, if any (one per folder).
func (g *Gateway) runningTurn(folder string) (string, *activeTurn) {
	g.active.mu.Lock()
	defer g.active.mu.Unlock()
	for id, t := range g.active.m {
		if t.batch.Folder == folder {
			return id, t
		}
	}
	return "", nil
}

// markReplied records that folder's running turn sent to chat, so its
// stdout reply to that chat is not sent as well.
func (g *Gateway) markReplied(folder string, chat adapters.JID) {
	g.active.mu.Lock()
	defer g.active.mu.Unlock()
	for _, t := range g.active.m {
		if t.batch.Folder == folder {
			t.replied[chat] = true
		}
	}
}
