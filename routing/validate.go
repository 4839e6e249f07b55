package routing

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"switchboard/adapters"
)

// MaxGlobLen is the longest glob a match value may be, in bytes.
const MaxGlobLen = 512

// ValidateMatch checks a route's match: every key is one of MatchKeys and
// every glob is non-empty, at most MaxGlobLen bytes and free of control
// characters. A nil or empty match is valid (a catch-all). Errors wrap
// ErrInvalidRoute.
func ValidateMatch(m map[string]string) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(MatchKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return invalid(fmt.Errorf("unknown match key %q; valid keys are %s", unknown[0], strings.Join(MatchKeys, ", ")))
	}
	for _, k := range MatchKeys {
		g, ok := m[k]
		if !ok {
			continue
		}
		if err := validateGlob(g); err != nil {
			return invalid(fmt.Errorf("match key %s: %w", k, err))
		}
	}
	return nil
}

func validateGlob(g string) error {
	if g == "" {
		return fmt.Errorf("empty glob; leave the key out to match anything")
	}
	if len(g) > MaxGlobLen {
		return fmt.Errorf("glob is %d bytes, at most %d allowed", len(g), MaxGlobLen)
	}
	for _, r := range g {
		if unicode.IsControl(r) {
			return fmt.Errorf("glob %q has control character %U", g, r)
		}
	}
	return nil
}

// Validate checks the route's match, its target folder and its mode ("" is
// taken as trigger). Errors wrap ErrInvalidRoute and name the field:
// `route target "Main": ...`, `route mode "x": want trigger or observe`.
// Validate does not look at ID or Seq: they are the store's business.
func (r Route) Validate() error {
	if err := ValidateMatch(r.Match); err != nil {
		return fmt.Errorf("route match: %w", err)
	}
	if err := r.Target.Validate(); err != nil {
		return invalid(fmt.Errorf("route target %q: %w", r.Target, err))
	}
	switch r.Mode {
	case "", Trigger, Observe:
	default:
		return invalid(fmt.Errorf("route mode %q: want %s or %s", r.Mode, Trigger, Observe))
	}
	return nil
}

// Normalize returns r with an empty Mode set to Trigger and a nil Match
// replaced by an empty map. It does not copy a non-nil Match.
func (r Route) Normalize() Route {
	if r.Mode == "" {
		r.Mode = Trigger
	}
	if r.Match == nil {
		r.Match = map[string]string{}
	}
	return r
}

// ValidateNewMatch is ValidateMatch for a match about to be stored (route
// add, add_route, set_routes, the config's routes:): it also refuses a glob
// that no message can match, which would capture nothing yet still make its
// route the owner of chats (owners ignore sender and verb): a verb glob that
// matches neither message nor mention, a platform glob with anything but
// lowercase letters, digits and "*", a chat_jid or sender without "*" that
// is not a JID, and a room, chat_jid or sender glob with a character no JID
// has. Routes already stored are loaded with ValidateMatch only, so a route
// stored before these checks still loads.
func ValidateNewMatch(m map[string]string) error {
	if err := ValidateMatch(m); err != nil {
		return err
	}
	for _, k := range MatchKeys {
		g, ok := m[k]
		if !ok {
			continue
		}
		if err := matchable(k, g); err != nil {
			return invalid(fmt.Errorf("match key %s: glob %q %w", k, g, err))
		}
	}
	return nil
}

// MaxSeq bounds a seq that a person gives (CheckSeq) either way: far beyond
// any table, and far from the ends of int, where one below the lowest
// (AheadSeq) would wrap round.
const MaxSeq = 1_000_000_000

// CheckSeq refuses a given seq beyond ±MaxSeq. A seq the table computes
// (AheadSeq) is not checked: it may have to go below a stored one.
func CheckSeq(seq int) error {
	if seq < -MaxSeq || seq > MaxSeq {
		return invalid(fmt.Errorf("route seq %d: want an integer from %d to %d", seq, -MaxSeq, MaxSeq))
	}
	return nil
}

// ValidateNew is Validate with ValidateNewMatch, for a route about to be
// stored.
func (r Route) ValidateNew() error {
	if err := ValidateNewMatch(r.Match); err != nil {
		return fmt.Errorf("route match: %w", err)
	}
	return r.Validate()
}

// matchable says why glob g of match key k can match no message, or nil.
func matchable(k, g string) error {
	switch k {
	case KeyVerb:
		if !GlobMatch(g, string(adapters.VerbMessage)) && !GlobMatch(g, string(adapters.VerbMention)) {
			return fmt.Errorf("matches neither %s nor %s", adapters.VerbMessage, adapters.VerbMention)
		}
	case KeyPlatform:
		for _, r := range g {
			if r != '*' && !adapters.IsPlatformName(string(r)) {
				return fmt.Errorf("has %q; a platform is lowercase letters and digits, e.g. web or telegram", r)
			}
		}
	case KeyChatJID, KeySender:
		if IsLiteral(g) {
			if err := adapters.JID(g).Validate(); err != nil {
				return fmt.Errorf("is not a JID (%v); use a JID such as web:lobby, or a glob such as web:*", err)
			}
		}
		return jidChars(g)
	case KeyRoom:
		return jidChars(g)
	}
	return nil
}

// jidChars refuses a glob with a character that no JID has.
func jidChars(g string) error {
	for _, r := range g {
		if r != '*' && !adapters.IsJIDRune(r) {
			return fmt.Errorf("has %q, which no JID has", r)
		}
	}
	return nil
}

// slashedPlatforms are the platforms every chat JID of which has a "/"
// after the ':' (CONTRACT §4): telegram:user/1, discord:1/2, slack:T/channel/C.
var slashedPlatforms = map[string]bool{"telegram": true, "discord": true, "slack": true}

// crossesSlash reports whether glob g can match a string with a "/".
func crossesSlash(g string) bool { return strings.Contains(g, "/") || strings.Contains(g, "**") }

// NeverMatchWarning says why a valid match can match no message that a
// person would mean it for, or "": a sender glob that cannot cross "/"
// (every sender JID has one: web:user/ann), or a room or chat_jid glob that
// cannot for a platform whose chat JIDs all have one ("telegram:*" matches
// no Telegram chat: "*" does not cross "/"). Such a route is accepted (it is
// what the contract's globs say) but it is likely a mistake.
func NeverMatchWarning(m map[string]string) string {
	if g, ok := m[KeySender]; ok && !crossesSlash(g) {
		return fmt.Sprintf("sender glob %q matches no sender: every sender JID has a / (web:user/ann, telegram:user/42) and * does not cross it; write e.g. web:user/* or ** for any sender", g)
	}
	platform := m[KeyPlatform]
	if j, ok := m[KeyChatJID]; ok {
		if i := strings.IndexByte(j, ':'); i > 0 && IsLiteral(j[:i]) {
			platform = j[:i]
		}
		if slashedPlatforms[platform] && !crossesSlash(j) {
			return fmt.Sprintf("chat_jid glob %q matches no %s chat: its chat JIDs have a / (e.g. %s) and * does not cross it; write %s:** for all of them", j, platform, exampleJID(platform), platform)
		}
	}
	if r, ok := m[KeyRoom]; ok && slashedPlatforms[platform] && !crossesSlash(r) {
		return fmt.Sprintf("room glob %q matches no %s chat: its rooms have a / (e.g. %s) and * does not cross it; write ** for all of them", r, platform, strings.TrimPrefix(exampleJID(platform), platform+":"))
	}
	if platform == "telegram" {
		room, key := m[KeyRoom], KeyRoom
		if j, ok := m[KeyChatJID]; ok {
			room, key = strings.TrimPrefix(j, "telegram:"), KeyChatJID
		}
		if w := telegramRoomWarning(room); w != "" {
			return fmt.Sprintf("%s glob %q matches no telegram chat: %s", key, m[key], w)
		}
	}
	return ""
}

// telegramRoomWarning says why a Telegram room glob matches no chat, or
// "": its kind is not user or group, or its id has Telegram's minus sign
// (the Bot API's chat id of a group is negative, -1001234567890 for a
// supergroup, and an operator copies it; a chat JID holds the id without
// it, CONTRACT §4).
func telegramRoomWarning(room string) string {
	kind, id, ok := strings.Cut(room, "/")
	if !ok || strings.Contains(kind, "*") {
		return ""
	}
	if kind != "user" && kind != "group" {
		return fmt.Sprintf("its chat JIDs are telegram:user/<id> (a private chat) and telegram:group/<id> (a group, supergroup or channel), not %s/", kind)
	}
	if rest, neg := strings.CutPrefix(id, "-"); neg {
		return fmt.Sprintf("a chat JID holds the chat's id without its minus sign: write telegram:%s/%s for Telegram's chat id -%s", kind, rest, rest)
	}
	return ""
}

func exampleJID(platform string) string {
	switch platform {
	case "telegram":
		return "telegram:group/1001234567"
	case "discord":
		return "discord:123/456"
	}
	return "slack:T1/channel/C1"
}
