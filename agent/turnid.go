package agent

import "fmt"

// TurnID names one agent turn. The gateway mints it (store.NewID("t-"):
// "t-" and 16 hex digits) and hands it on in Input.TurnID; Run gives it to
// the agent as SWITCHBOARD_TURN_ID, and a remote turn uses it as a NATS
// subject token, a message id and a file name as it is. Text that comes in
// from elsewhere (a job on NATS, a row of the store) is checked with
// ParseTurnID or Validate before it is trusted as one.
type TurnID string

// maxTurnIDLen bounds a turn id: the gateway's have 18 bytes.
const maxTurnIDLen = 64

// ParseTurnID returns s as a TurnID when it is well formed: 1 to 64 of
// [A-Za-z0-9_-]. Otherwise the error wraps ErrBadTurnID.
func ParseTurnID(s string) (TurnID, error) {
	if s == "" || len(s) > maxTurnIDLen {
		return "", fmt.Errorf("%w %q: want 1 to %d of [A-Za-z0-9_-]", ErrBadTurnID, s, maxTurnIDLen)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", fmt.Errorf("%w %q: want 1 to %d of [A-Za-z0-9_-]", ErrBadTurnID, s, maxTurnIDLen)
		}
	}
	return TurnID(s), nil
}

// Validate says what is wrong with id, as ParseTurnID does; nil when it
// is well formed.
func (id TurnID) Validate() error {
	_, err := ParseTurnID(string(id))
	return err
}

func (id TurnID) String() string { return string(id) }

// envEntry is id's SWITCHBOARD_TURN_ID entry of the agent's environment,
// or "" for the empty id (which marks nothing).
func (id TurnID) envEntry() string {
	if id == "" {
		return ""
	}
	return "SWITCHBOARD_TURN_ID=" + string(id)
}
