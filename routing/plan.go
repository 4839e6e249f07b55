package routing

import "switchboard/adapters"

// A chat's plan is the short list of routes Resolve and Owner try for a
// message in that chat, built at New for every chat that a route pins (a
// literal chat_jid, or a literal platform and room). The chat fixes three of
// the six match keys (platform, room, chat_jid), so every route whose globs
// for those keys reject the chat is left out, and the list ends at the first
// route that constrains nothing else: it matches every message in the chat,
// and no later route can win there. What remains is checked on sender, verb
// and topic alone. With 10,000 routes a chat's plan holds its own route and
// the few earlier routes that look only at senders, verbs or topics, instead
// of every wildcard route ordered before it.
//
// Plans are bounded: past maxPlanEntries in all (wildcard routes ordered
// before many pinned chats multiply), the remaining chats use the three
// indexed lists (Table.first).
const maxPlanEntries = 1 << 20

// chatKeys are the match keys a chat JID fixes.
var chatKeys = [...]int{kPlatform, kRoom, kChatJID}

// span is a chat's plan: flat[off : off+n].
type span struct{ off, n int32 }

// plans holds every pinned chat's plan in one slice.
type plans struct {
	byChat map[string]span
	flat   []int32
}

// get returns chat's plan, ok false when it has none.
func (p *plans) get(chat string) ([]int32, bool) {
	s, ok := p.byChat[chat]
	return p.flat[s.off : s.off+s.n], ok
}

// buildPlans fills t.plans for the chats in t.byChat.
func (t *Table) buildPlans() {
	p := plans{byChat: make(map[string]span, len(t.byChat)), flat: make([]int32, 0, len(t.byChat))}
	for chat, own := range t.byChat {
		off := len(p.flat)
		p.flat = t.appendPlan(p.flat, chat, own)
		if len(p.flat) > maxPlanEntries {
			return // t.plans stays empty: a partial set would do, but which chats it held would vary
		}
		p.byChat[chat] = span{int32(off), int32(len(p.flat) - off)}
	}
	// Every chat in byChat has a plan, which first looks up instead.
	t.plans, t.byChat = p, nil
}

// appendPlan appends to out the positions, in order, of the routes that can
// match a message in chat, up to the first that matches every one; own is
// t.byChat[chat].
func (t *Table) appendPlan(out []int32, chat string, own []int32) []int32 {
	jid := adapters.JID(chat)
	var v values
	v[kPlatform], v[kRoom], v[kChatJID] = jid.Platform(), jid.Room(), chat
	lists := [...][]int32{own, t.byPlatform[v[kPlatform]], t.wild}
	for {
		// The smallest position at the head of the three lists.
		li := -1
		for l := range lists {
			if len(lists[l]) > 0 && (li < 0 || lists[l][0] < lists[li][0]) {
				li = l
			}
		}
		if li < 0 {
			return out
		}
		i := lists[li][0]
		lists[li] = lists[li][1:]
		e := &t.entries[i]
		if !e.matchesChat(&v) {
			continue
		}
		out = append(out, i)
		if e.globs[kSender] == nil && e.globs[kVerb] == nil && e.globs[kTopic] == nil {
			return out
		}
	}
}

// matchesChat reports whether e's globs for the keys a chat fixes accept v.
func (e *entry) matchesChat(v *values) bool {
	for _, k := range chatKeys {
		if g := e.globs[k]; g != nil && !g.match(v[k]) {
			return false
		}
	}
	return true
}

// matchesMessage reports whether e's globs for sender, verb (unless
// ownerOnly) and topic accept v: the rest of mismatch for a route in a
// chat's plan.
func (e *entry) matchesMessage(v *values, ownerOnly bool) bool {
	if g := e.globs[kTopic]; g != nil && !g.match(v[kTopic]) {
		return false
	}
	if ownerOnly {
		return true
	}
	if g := e.globs[kVerb]; g != nil && !g.match(v[kVerb]) {
		return false
	}
	g := e.globs[kSender]
	return g == nil || g.match(v[kSender])
}
