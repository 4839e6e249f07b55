package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

// LoopGuard bounds a web room that its agent keeps re-triggering from its
// own turns. An agent with network can post into a web room over loopback
// under any name (docs/operating.md): when the room routes to its own
// folder, every turn posts the message that starts the next. The web chat
// is the one platform where that is possible (elsewhere the bot's own
// messages never trigger), so the guard watches web chats only.
type LoopGuard struct {
	// Turns in a row of one room whose messages all arrived while that
	// folder's turn was running, within Window, pause the room. Default 6
	// in 5 minutes.
	Turns  int
	Window time.Duration
	// Pause is how long the room's messages wait (stored, not dropped)
	// before they are answered again. Default 10 minutes.
	Pause time.Duration
}

func (l LoopGuard) withDefaults() LoopGuard {
	if l.Turns <= 0 {
		l.Turns = 6
	}
	if l.Window <= 0 {
		l.Window = 5 * time.Minute
	}
	if l.Pause <= 0 {
		l.Pause = 10 * time.Minute
	}
	return l
}

type loopKey struct {
	folder string
	chat   adapters.JID
	topic  string
}

// loopState is one room's turns in a row since a trigger message last
// arrived while its folder ran no turn (a person, not the agent's echo).
// A room without an entry is in that state: nothing in a row.
type loopState struct {
	starts []time.Time
}

// loops is the guard's state, in memory: a restart forgets it, and the
// room needs Turns more echoes to pause again. Entries exist only for
// rooms whose last turn started while no message had arrived idle since,
// and are pruned once their window is over.
type loops struct {
	mu     sync.Mutex
	cfg    LoopGuard
	m      map[loopKey]*loopState
	now    func() time.Time
	pruned time.Time
}

// arrived records a trigger message for folder in chat/topic; running says
// whether a turn of folder was running when it was stored.
func (l *loops) arrived(k loopKey, running bool) {
	if running {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, k)
}

// started records a turn of chat/topic starting and reports whether the
// room is to pause instead: Turns turns in a row, within Window, the
// first started by any message, the rest only by messages that arrived
// while the folder was busy.
func (l *loops) started(k loopKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.m == nil {
		l.m = map[loopKey]*loopState{}
	}
	if len(l.m) > 10_000 && now.Sub(l.pruned) > time.Minute {
		l.pruned = now
		for key, s := range l.m {
			if now.Sub(s.starts[len(s.starts)-1]) > l.cfg.Window {
				delete(l.m, key)
			}
		}
	}
	s := l.m[k]
	if s == nil {
		s = &loopState{}
		l.m[k] = s
	}
	s.starts = append(s.starts, now)
	for len(s.starts) > 1 && now.Sub(s.starts[0]) > l.cfg.Window {
		s.starts = s.starts[1:]
	}
	if len(s.starts) < l.cfg.Turns {
		return false
	}
	delete(l.m, k)
	return true
}

// watchLoop notes where a web message that triggers folder arrived: during
// one of folder's turns or not.
func (g *Gateway) watchLoop(m store.Message, work []store.WorkItem) {
	for _, w := range work {
		if w.Mode != "trigger" || m.ChatJID.Platform() != "web" {
			continue
		}
		_, t := g.runningTurn(w.Folder)
		g.loops.arrived(loopKey{w.Folder, w.ChatJID, w.Topic}, t != nil)
	}
}

// pauseLoop, at the start of a message turn in a web room, pauses a room
// the guard caught: its work waits LoopGuard.Pause (the messages stay
// stored and are answered after it), and the room is told once. It
// reports whether the turn is not to run.
func (g *Gateway) pauseLoop(ctx context.Context, b store.Batch) bool {
	if b.Items[0].Trigger != store.TriggerMessage || b.ChatJID.Platform() != "web" ||
		!g.loops.started(loopKey{b.Folder, b.ChatJID, b.Topic}) {
		return false
	}
	until := g.st.Now().Add(g.loops.cfg.Pause)
	g.log.Warn("web room paused: the agent's own turns keep re-triggering it", "folder", b.Folder, "jid", b.ChatJID,
		"turns", g.loops.cfg.Turns, "window", g.loops.cfg.Window, "until", until.Format(time.RFC3339))
	text := fmt.Sprintf("Paused until %s: the last %d turns here were all started by messages posted while the agent was still running, "+
		"which looks like the agent posting into its own room. Messages are kept and answered after the pause.",
		g.clockTime(until), g.loops.cfg.Turns)
	if err := g.holdChat(ctx, b, until, g.loops.cfg.Pause, text, ""); err != nil {
		g.log.Error("pause web room", "folder", b.Folder, "jid", b.ChatJID, "err", err)
		return false
	}
	return true
}
