package routing

import (
	"fmt"
	"strings"

	"switchboard/adapters"
	"switchboard/groups"
)

// CheckAdd decides whether the group caller, of the given tier, may add
// r (CONTRACT §7). Tier 0 (the operator) may add anything. Any other caller
// may add a route only when its target is in the caller's subtree and its
// match pins chat_jid to one literal chat JID whose current owner
// (Owner(chat, "")) is in the caller's subtree; if the match also pins a
// literal topic, the owner of that topic must be in the subtree too. This
// checks what the route captures, not only where it points: a group may not
// add a catch-all or take over another group's chat. Errors wrap
// ErrForbidden and say what to change. CheckAdd does not validate r; call
// r.Validate as well.
func (t *Table) CheckAdd(caller groups.Folder, tier int, r Route) error {
	if tier == 0 {
		return nil
	}
	chat, err := t.checkEdit("add", caller, r)
	if err != nil {
		return err
	}
	// A route pinned to a topic must not take over a topic that another
	// group's route owns inside a chat this group owns.
	if topic, ok := r.Match[KeyTopic]; ok && IsLiteral(topic) {
		if err := t.checkOwner(caller, chat, topic); err != nil {
			return err
		}
	}
	return t.checkTopicsKept(caller, chat, r)
}

// checkTopicsKept refuses r when, added at its seq, it would take a topic of
// chat that a route pins today, owned outside caller's subtree, from its
// owner: a route for the whole chat ahead of another group's thread route
// would capture that thread's messages. The store numbers a new route after
// every other, so r goes after the routes of its own seq.
func (t *Table) checkTopicsKept(caller groups.Folder, chat adapters.JID, r Route) error {
	if t == nil {
		return nil
	}
	var added *entry
	checked := map[string]bool{} // a topic many routes pin is looked up once
	for i := range t.entries {
		glob, ok := t.entries[i].route.Match[KeyTopic]
		if !ok || glob == "" || checked[glob] {
			continue
		}
		checked[glob] = true
		// A route for the chat's threads by a glob (topic=t*) is checked
		// through two threads it takes (its stars matching nothing, and a
		// byte no thread id has, which no narrower route pins), and r
		// overlaps it unless r's own topic cannot match what it does.
		for _, tp := range topicWitnesses(glob) {
			v := messageValues(Message{ChatJID: chat, Topic: tp})
			at := t.first(&v, true)
			if at < 0 || caller.Contains(t.entries[at].route.Target) || t.entries[at].route.Seq <= r.Seq {
				continue // unowned, owned by the subtree, or its owner's route stays ahead
			}
			if added == nil {
				e := newEntry(r)
				added = &e
			}
			miss := added.mismatch(&v, true)
			overlaps := miss < 0
			if own, pinned := r.Match[KeyTopic]; pinned && !overlaps && !IsLiteral(glob) && miss == kTopic {
				if IsLiteral(own) {
					overlaps = GlobMatch(glob, own)
				} else {
					overlaps = globsMayMeet(own, glob)
				}
			}
			if overlaps {
				return fmt.Errorf("%w: at seq %d the route would take topic %q of chat %q from group %q, outside the subtree of group %q; give it a seq after that group's route, or pin another topic",
					ErrForbidden, r.Seq, glob, chat, t.entries[at].route.Target, caller)
			}
		}
	}
	return nil
}

// topicWitnesses are topics that glob matches, to look up who owns them:
// the glob itself when it is literal, else its stars matching nothing and
// matching a byte no thread id holds (so that a narrower route for one
// thread, topic=t ahead of topic=t*, does not hide the rest). The empty
// topic (the chat itself) is never one: its owner is checked already.
func topicWitnesses(glob string) []string {
	if IsLiteral(glob) {
		return []string{glob}
	}
	var out []string
	for _, fill := range []string{"", "\x01"} {
		if w := strings.ReplaceAll(glob, "*", fill); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// globsMayMeet reports whether some string may match both globs: false
// only when their literal prefixes or their literal suffixes disagree
// (t1* and x*), true otherwise; a yes that is not certain refuses a route
// edit that could have been allowed, never the reverse.
func globsMayMeet(a, b string) bool {
	pa, pb := literalPrefix(a), literalPrefix(b)
	if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
		return false
	}
	sa, sb := literalSuffix(a), literalSuffix(b)
	return strings.HasSuffix(sa, sb) || strings.HasSuffix(sb, sa)
}

// literalSuffix is the part of glob after its last "*".
func literalSuffix(glob string) string {
	return glob[strings.LastIndexByte(glob, '*')+1:]
}

// CheckDelete decides whether the group caller may delete (or replace) r,
// a route currently in the table. Tier 0 may delete anything; any other caller
// only routes whose target is in its subtree and that pin chat_jid to a
// literal chat owned by its subtree. Errors wrap ErrForbidden.
func (t *Table) CheckDelete(caller groups.Folder, tier int, r Route) error {
	if tier == 0 {
		return nil
	}
	_, err := t.checkEdit("delete", caller, r)
	return err
}

// checkEdit runs the checks shared by add and delete and returns the pinned chat.
func (t *Table) checkEdit(verb string, caller groups.Folder, r Route) (chat adapters.JID, err error) {
	if !caller.Contains(r.Target) {
		return "", fmt.Errorf("%w: group %q may %s only routes that target its own subtree (%q or below); target %q is outside it",
			ErrForbidden, caller, verb, caller, r.Target)
	}
	pinned, ok := r.Match[KeyChatJID]
	if !ok {
		fix := "ask the operator to delete it"
		if verb == "add" {
			fix = "add chat_jid=<chat JID> to the match"
			if p, room := r.Match[KeyPlatform], r.Match[KeyRoom]; p != "" && room != "" && IsLiteral(p) && IsLiteral(room) {
				fix = fmt.Sprintf("use chat_jid=%s instead of platform and room", p+":"+room)
			}
		}
		return "", fmt.Errorf("%w: group %q may %s only routes that pin chat_jid to one chat it owns; %s",
			ErrForbidden, caller, verb, fix)
	}
	if !IsLiteral(pinned) {
		return "", fmt.Errorf("%w: chat_jid %q is a glob and could capture other groups' chats; group %q must pin one literal chat JID",
			ErrForbidden, pinned, caller)
	}
	chat, err = adapters.ParseJID(pinned)
	if err != nil {
		return "", fmt.Errorf("%w: chat_jid: %w", ErrForbidden, err)
	}
	return chat, t.checkOwner(caller, chat, "")
}

// checkOwner requires the chat (and topic) to be owned by caller's subtree.
func (t *Table) checkOwner(caller groups.Folder, chat adapters.JID, topic string) error {
	where := fmt.Sprintf("chat %q", chat)
	if topic != "" {
		where = fmt.Sprintf("topic %q of chat %q", topic, chat)
	}
	owner, ok := t.Owner(chat, topic)
	switch {
	case !ok:
		return fmt.Errorf("%w: no route owns %s yet; ask the operator to route it to group %q first",
			ErrForbidden, where, caller)
	case !caller.Contains(owner):
		return fmt.Errorf("%w: %s is owned by group %q, outside the subtree of group %q; only its owner or the operator may route it",
			ErrForbidden, where, owner, caller)
	}
	return nil
}
