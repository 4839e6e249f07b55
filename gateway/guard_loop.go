package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// LoopGuard bounds the turns that a group's agent starts for itself by
// posting into web rooms. An agent with network can post into any web
// room over loopback under any name (docs/operating.md): when the room
// routes to its own folder, every turn posts the message that starts the
// next, in the same room or each time in a new one. The web chat is the
// one platform where that is possible (elsewhere the bot's own messages
// never trigger), so the guard watches web chats only, and only messages
// posted from the gateway's own machine (adapters.Inbound.FromHost) while
// the folder they route to runs a turn: the echoes. A person's browser on
// another address is never counted.
//
// Two bounds: a room's turns in a row started by echoes pause that room
// (the agent posting into its own room); new rooms that echoes open are
// counted per folder, and one past NewRooms is refused and pauses the
// folder's rooms whose waiting messages are all echoes (the agent posting
// each turn into a new room). Turns are not counted per folder: a burst
// from a client on this machine over a few rooms of one group would trip
// that, and it never opens more than a few rooms.
type LoopGuard struct {
	// Turns in a row of one room, each started only by echoes (the first
	// by any message), within Window, pause the room. Default 6 in 5
	// minutes.
	Turns  int
	Window time.Duration
	// Pause is how long paused rooms' messages wait (stored, not dropped)
	// before they are answered again. Default 10 minutes.
	Pause time.Duration
	// NewRooms is how many new web rooms echoes may open per folder within
	// Window; a post that would open one more is refused (the web chat
	// answers 429) and not stored, and the folder's echo-only rooms pause.
	// Default 20: room for people who post from this machine (a browser on
	// it, a reverse proxy, scripts) into a handful of rooms while the group
	// is busy, and still a bound on an agent hopping rooms (each new room
	// then gets at most Turns echo turns).
	NewRooms int
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
	if l.NewRooms <= 0 {
		l.NewRooms = 20
	}
	return l
}

type loopKey struct {
	folder groups.Folder
	chat   adapters.JID
	topic  string
}

// maxLoopRooms bounds the rooms of one folder the guard remembers (rows
// and rooms holding a person's message); past it, their windows over,
// they are forgotten, and at worst a room needs Turns more echoes to
// pause, or a person's room counts as an echo's.
const maxLoopRooms = 10_000

// loopState is one folder's web rooms as the guard sees them.
type loopState struct {
	rows map[loopKey][]time.Time // each room's turn starts in a row, within Window, oldest first
	// person: rooms with a person's message queued since their last turn,
	// the newest such message's seq: a turn whose batch was claimed
	// before it came leaves it for the next (started).
	person map[loopKey]int64
	rooms  []time.Time // new rooms echoes opened, within Window
	until  time.Time   // the folder's echo-only rooms wait until then
	last   time.Time   // the last change, for pruning
}

// loops is the guard's state, in memory: a restart forgets it. Entries
// are pruned once their windows and pause are over.
type loops struct {
	mu     sync.Mutex
	cfg    LoopGuard
	m      map[groups.Folder]*loopState
	now    func() time.Time
	pruned time.Time
}

// state returns folder's entry, made if missing; l.mu is held.
func (l *loops) state(folder groups.Folder, now time.Time) *loopState {
	if l.m == nil {
		l.m = map[groups.Folder]*loopState{}
	}
	if len(l.m) > 10_000 && now.Sub(l.pruned) > time.Minute {
		l.pruned = now
		for f, s := range l.m {
			if now.Sub(s.last) > l.cfg.Window && now.After(s.until) && len(s.person) == 0 {
				delete(l.m, f)
			}
		}
	}
	s := l.m[folder]
	if s == nil {
		s = &loopState{rows: map[loopKey][]time.Time{}, person: map[loopKey]int64{}}
		l.m[folder] = s
	}
	if len(s.rows) >= maxLoopRooms {
		for k, starts := range s.rows {
			if now.Sub(starts[len(starts)-1]) > l.cfg.Window {
				delete(s.rows, k)
			}
		}
	}
	s.last = now
	return s
}

// arrived records a trigger message seq for k; echo says whether it was
// posted from the host while k's folder ran a turn.
func (l *loops) arrived(k loopKey, echo bool, seq int64) {
	if echo {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.state(k.folder, l.now()); len(s.person) < maxLoopRooms {
		s.person[k] = max(s.person[k], seq)
	}
}

// openRoom counts a new room that an echo opens in folder, and returns 0;
// when NewRooms were opened within Window it counts nothing, pauses the
// folder's echo-only rooms (unless they are paused already: then caught
// is false) and returns how long until one more room may be opened.
func (l *loops) openRoom(folder groups.Folder) (wait time.Duration, until time.Time, caught bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	s := l.state(folder, now)
	r := Rate{Count: l.cfg.NewRooms, Window: l.cfg.Window}
	s.rooms = r.trim(s.rooms, now)
	if wait = r.wait(s.rooms, now); wait <= 0 {
		s.rooms = append(s.rooms, now)
		return 0, time.Time{}, false
	}
	if !now.Before(s.until) {
		s.until, caught = now.Add(l.cfg.Pause), true
	}
	return wait, s.until, caught
}

// started records a web turn of k, whose batch's newest message is last,
// starting and reports whether it is to wait instead, until when (the
// guard's clock), and whether this start caught the loop (tell the
// room). A room with a person's message always runs and starts its row
// over (the message is noted until a turn that has it starts: one whose
// batch was claimed before it came leaves it to the next); an echo-only
// room waits while its folder is paused, and its start that makes Turns
// in a row within Window pauses it.
func (l *loops) started(k loopKey, last int64) (until time.Time, caught, hold bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	s := l.state(k.folder, now)
	if p, ok := s.person[k]; ok {
		if p <= last {
			delete(s.person, k)
		}
		s.rows[k] = []time.Time{now}
		return time.Time{}, false, false
	}
	if now.Before(s.until) {
		return s.until, false, true
	}
	starts := append(s.rows[k], now)
	for len(starts) > 1 && now.Sub(starts[0]) > l.cfg.Window {
		starts = starts[1:]
	}
	if len(starts) < l.cfg.Turns {
		s.rows[k] = starts
		return time.Time{}, false, false
	}
	delete(s.rows, k)
	return now.Add(l.cfg.Pause), true, true
}

// loopStore is what the loop guard needs of the store.
type loopStore interface {
	Now() time.Time
	MessagesAfter(ctx context.Context, chat adapters.JID, afterSeq int64, limit int) ([]store.Message, error)
}

// runningTurns finds a folder's running turn (activeTurns).
type runningTurns interface {
	running(folder groups.Folder) (string, *activeTurn)
}

// loopGuard applies LoopGuard: at Deliver it refuses a new room too many
// (refuse) and notes how web triggers arrived (arrived); at turn start it
// pauses a room the agent keeps re-triggering (check).
type loopGuard struct {
	cfg    LoopGuard
	rooms  *loops
	old    *oldRooms // web rooms known to hold a message (guard_loop_rooms.go)
	st     loopStore
	active runningTurns
	holder chatHolder
	send   func(context.Context, ops.SendRequest) (store.OutboxItem, error) // queue a notice (outbox.send)
	zone   *time.Location                                                   // notices' clock times
	log    *slog.Logger
}

func newLoopGuard(cfg LoopGuard, now func() time.Time) loopGuard {
	cfg = cfg.withDefaults()
	return loopGuard{cfg: cfg, rooms: &loops{cfg: cfg, now: now}, old: &oldRooms{}}
}

// echo reports whether a message posted from the host (fromHost) for
// folder is an echo: folder runs a turn now.
func (l loopGuard) echo(folder groups.Folder, fromHost bool) bool {
	if !fromHost {
		return false
	}
	_, t := l.active.running(folder)
	return t != nil
}

// refuse refuses a web message from the host that would open a new room
// for a folder running a turn, once echoes opened LoopGuard.NewRooms
// rooms of that folder within its window: an agent posting into new
// rooms. The first refusal pauses the folder's echo-only rooms and tells
// the room whose turn posted it. The error wraps *adapters.RetryAfterError
// (the web chat answers 429 with its text).
func (l loopGuard) refuse(ctx context.Context, in adapters.Inbound, work []store.WorkItem) error {
	if !in.FromHost || in.Chat.Platform() != "web" {
		return nil
	}
	for _, w := range work {
		if w.Mode != "trigger" || !l.echo(w.Folder, true) {
			continue
		}
		if l.old.has(in.Chat) {
			return nil
		}
		old, err := l.st.MessagesAfter(ctx, in.Chat, 0, 1)
		if err != nil {
			return fmt.Errorf("look up web room %s: %w", in.Chat, err)
		}
		if len(old) > 0 {
			l.old.add(in.Chat)
			return nil
		}
		wait, until, caught := l.rooms.openRoom(w.Folder)
		if wait <= 0 {
			return nil
		}
		cfg := l.cfg
		l.log.Warn("web room refused: posts from this machine keep opening new rooms during the group's turns",
			"folder", w.Folder, "jid", in.Chat, "new_rooms", cfg.NewRooms, "window", cfg.Window)
		if caught {
			l.pauseNewRooms(ctx, w.Folder, until)
		}
		return fmt.Errorf("new room %s refused: %d new rooms for group %s were already opened from this machine "+
			"while its agent was running, in the last %s (an agent posting into new rooms?); post into an existing room, or wait: %w",
			in.Chat.Room(), cfg.NewRooms, w.Folder, spell(cfg.Window), &adapters.RetryAfterError{Wait: wait.Round(time.Second)})
	}
	return nil
}

// pauseNewRooms tells the room of folder's running turn that the folder's
// echo-only web rooms are paused until until (the guard's clock), and
// logs it.
func (l loopGuard) pauseNewRooms(ctx context.Context, folder groups.Folder, until time.Time) {
	storeUntil := l.st.Now().Add(until.Sub(l.rooms.now()))
	l.log.Warn("web rooms paused: the agent keeps opening new rooms", "folder", folder, "new_rooms", l.cfg.NewRooms,
		"window", l.cfg.Window, "until", storeUntil.Format(time.RFC3339))
	_, t := l.active.running(folder)
	if t == nil || t.batch.ChatJID.Platform() != "web" {
		return
	}
	text := fmt.Sprintf("Paused until %s: this group's agent opened %d new web rooms from this machine within %s while it was running, "+
		"which looks like the agent posting into new rooms of its own. Further new rooms are refused; messages are kept and answered after the pause.",
		clockTime(storeUntil, l.zone), l.cfg.NewRooms, spell(l.cfg.Window))
	req := ops.SendRequest{Chat: t.batch.ChatJID, Topic: t.batch.Topic, Folder: folder, Text: text, Kind: store.OutboxNotice,
		Key: fmt.Sprintf("loop/%s/%d", folder, storeUntil.Unix())}
	if _, err := l.send(ctx, req); err != nil {
		l.log.Error("tell the paused web room", "folder", folder, "jid", t.batch.ChatJID, "err", err)
	}
}

// arrived notes how a web message that triggers a folder arrived: as an
// echo of one of its turns or not.
func (l loopGuard) arrived(m store.Message, work []store.WorkItem, fromHost bool) {
	if m.ChatJID.Platform() == "web" {
		l.old.add(m.ChatJID)
	}
	for _, w := range work {
		if w.Mode != "trigger" || m.ChatJID.Platform() != "web" {
			continue
		}
		l.rooms.arrived(loopKey{w.Folder, w.ChatJID, w.Topic}, l.echo(w.Folder, fromHost), m.Seq)
	}
}

// check, at the start of a message turn in a web room, holds it when the
// guard says so: its work waits until the room's or the folder's pause is
// over (the messages stay stored and are answered after it); a room whose
// own turns caught the loop is told.
func (l loopGuard) check(ctx context.Context, c turnCandidate) (verdict, error) {
	b := c.batch
	if b.Items[0].Trigger != store.TriggerMessage || b.ChatJID.Platform() != "web" {
		return verdictRun, nil
	}
	until, caught, hold := l.rooms.started(loopKey{b.Folder, b.ChatJID, b.Topic}, lastSeq(b))
	if !hold {
		return verdictRun, nil
	}
	wait := until.Sub(l.rooms.now())
	storeUntil := l.st.Now().Add(wait)
	text := ""
	if caught {
		l.log.Warn("web room paused: the agent's own turns keep re-triggering it", "folder", b.Folder, "jid", b.ChatJID,
			"turns", l.cfg.Turns, "window", l.cfg.Window, "until", storeUntil.Format(time.RFC3339))
		text = fmt.Sprintf("Paused until %s: the last %d turns here were all started by messages posted from this machine "+
			"while the agent was still running, which looks like the agent posting into its own room. Messages are kept and answered after the pause.",
			clockTime(storeUntil, l.zone), l.cfg.Turns)
	} else {
		l.log.Info("web room held: its group's echo-only rooms are paused", "folder", b.Folder, "jid", b.ChatJID,
			"until", storeUntil.Format(time.RFC3339))
	}
	if err := l.holder.hold(ctx, b, storeUntil, wait, text, ""); err != nil {
		return verdictRun, fmt.Errorf("pause web room: %w", err)
	}
	return verdictHeld, nil
}
