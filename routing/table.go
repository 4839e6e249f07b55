package routing

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"switchboard/groups"

	"switchboard/adapters"
)

// Store is what routing needs from persistence (implemented by package store).
type Store interface {
	// ListRoutes returns every stored route, in any order.
	ListRoutes(ctx context.Context) ([]Route, error)
}

// Load reads the routes from s and builds a Table.
func Load(ctx context.Context, s Store) (*Table, error) {
	routes, err := s.ListRoutes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return New(routes)
}

// Indexes of the match keys, in MatchKeys order.
const (
	kPlatform = iota
	kRoom
	kChatJID
	kSender
	kVerb
	kTopic
	numKeys
)

// values holds a message's value for each match key.
type values [numKeys]string

func messageValues(m Message) values {
	return values{m.ChatJID.Platform(), m.ChatJID.Room(), string(m.ChatJID), string(m.Sender), string(m.Verb), m.Topic}
}

// entry is a route with its globs compiled; globs[k] is nil when the route
// does not constrain key k.
type entry struct {
	route Route
	globs [numKeys]*glob
}

// mismatch returns the first key (in MatchKeys order) whose glob rejects v,
// or -1 when all given keys match. With ownerOnly, sender and verb are not
// looked at.
func (e *entry) mismatch(v *values, ownerOnly bool) int {
	for k, g := range e.globs {
		if g == nil || ownerOnly && (k == kSender || k == kVerb) {
			continue
		}
		if !g.match(v[k]) {
			return k
		}
	}
	return -1
}

// Table is an immutable, indexed route table; safe for concurrent readers.
//
// Routes are indexed at New so that Resolve and Owner look only at the routes
// that can match the message's chat: those pinning its chat JID (a literal
// chat_jid, or a literal platform and room), those pinning its platform (a
// literal platform, or a chat_jid glob whose literal prefix names the
// platform), and the rest (wildcards). Each list holds positions in the sorted
// route order, so the first match in each list is found by a short scan and
// the smallest position among the three wins. A chat that a route pins has
// its own shorter list, its plan (plan.go). A nil *Table is an empty table.
type Table struct {
	entries    []entry
	byChat     map[string][]int32
	byPlatform map[string][]int32
	wild       []int32
	plans      plans   // per pinned chat (plan.go); empty past maxPlanEntries
	targets    targets // the chats each target's routes pin (owned.go)
}

// New validates every route and builds a Table. Routes are normalized and
// copied, so later changes to the argument do not affect the table. They are
// ordered by (Seq, ID); routes that tie on both keep their order in routes.
func New(routes []Route) (*Table, error) {
	t := &Table{
		entries:    make([]entry, 0, len(routes)),
		byChat:     map[string][]int32{},
		byPlatform: map[string][]int32{},
		targets:    targets{pinned: map[groups.Folder][]string{}, unpinned: map[groups.Folder]bool{}},
	}
	for _, r := range routes {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("route id %d: %w", r.ID, err)
		}
		r = r.Normalize()
		r.Match = maps.Clone(r.Match)
		t.entries = append(t.entries, newEntry(r))
	}
	slices.SortStableFunc(t.entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.route.Seq, b.route.Seq), cmp.Compare(a.route.ID, b.route.ID))
	})
	for i := range t.entries {
		t.index(int32(i))
	}
	t.buildPlans()
	return t, nil
}

// newEntry compiles r's globs.
func newEntry(r Route) entry {
	e := entry{route: r}
	for k, key := range MatchKeys {
		if g, ok := r.Match[key]; ok {
			e.globs[k] = compileGlob(g)
		}
	}
	return e
}

// index files entry i under the chat, the platform or the wildcard list.
func (t *Table) index(i int32) {
	m := t.entries[i].route.Match
	chat, hasChat := m[KeyChatJID]
	platform, hasPlatform := m[KeyPlatform]
	room, hasRoom := m[KeyRoom]
	switch {
	case hasChat && IsLiteral(chat):
		t.byChat[chat] = append(t.byChat[chat], i)
		t.targets.add(&t.entries[i].route, chat)
		return
	case hasPlatform && IsLiteral(platform) && hasRoom && IsLiteral(room):
		// Platform p and room r match exactly the chat JID "p:r".
		key := platform + ":" + room
		t.byChat[key] = append(t.byChat[key], i)
		t.targets.add(&t.entries[i].route, key)
		return
	}
	t.targets.add(&t.entries[i].route, "")
	switch {
	case hasPlatform && IsLiteral(platform):
		t.byPlatform[platform] = append(t.byPlatform[platform], i)
	case hasChat && strings.Contains(literalPrefix(chat), ":"):
		// "telegram:**": every chat it matches starts with "telegram:".
		p, _, _ := strings.Cut(chat, ":")
		t.byPlatform[p] = append(t.byPlatform[p], i)
	default:
		t.wild = append(t.wild, i)
	}
}

// Routes returns copies of the routes, normalized and sorted by (Seq, ID).
func (t *Table) Routes() []Route {
	if t == nil {
		return []Route{}
	}
	out := make([]Route, len(t.entries))
	for i, e := range t.entries {
		out[i] = e.route
		out[i].Match = maps.Clone(e.route.Match)
	}
	return out
}

// Len is the number of routes.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// first returns the position of the first route matching v, or -1.
func (t *Table) first(v *values, ownerOnly bool) int {
	best := -1
	if t == nil {
		return best
	}
	if p, ok := t.plans.get(v[kChatJID]); ok {
		for _, i := range p {
			if t.entries[i].matchesMessage(v, ownerOnly) {
				return int(i)
			}
		}
		return best
	}
	for _, list := range [...][]int32{t.byChat[v[kChatJID]], t.byPlatform[v[kPlatform]], t.wild} {
		for _, i := range list {
			if best >= 0 && int(i) >= best {
				break
			}
			if t.entries[i].mismatch(v, ownerOnly) < 0 {
				best = int(i)
				break
			}
		}
	}
	return best
}

// Resolve returns the route that wins for m: the first by (Seq, ID) whose
// every match key matches. ok is false when no route matches (unrouted). The
// returned Route's Match map is shared with the table: do not modify it.
func (t *Table) Resolve(m Message) (Route, bool) {
	v := messageValues(m)
	i := t.first(&v, false)
	if i < 0 {
		return Route{}, false
	}
	return t.entries[i].route, true
}

// Owner returns the folder that owns a chat (and topic): the target of the
// first route that matches it ignoring sender and verb, whatever its mode.
// Pass topic "" for the chat itself. Ownership decides who may act on a chat;
// it is not the same question as which route a given message triggers.
func (t *Table) Owner(chatJID adapters.JID, topic string) (folder groups.Folder, ok bool) {
	v := messageValues(Message{ChatJID: chatJID, Topic: topic})
	i := t.first(&v, true)
	if i < 0 {
		return "", false
	}
	return t.entries[i].route.Target, true
}
