package store

import "unicode/utf8"

// maxText is the largest message text stored (an inbound message, an edit,
// a reply or a send); longer text is cut by CapText.
const maxText = 64 << 10

// MaxText is maxText for writers that refuse longer text instead of
// cutting it (the CLI's send and inject).
const MaxText = maxText

// CapText cuts text longer than the largest stored (an agent that printed
// a flood) at a rune boundary and says so. The CLI's and the gateway's
// writers (ops.StoreMessage, ops.QueueSend, a turn's reply, an MCP
// edit) cut with it before they store.
func CapText(s string) string {
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[truncated by switchboard]"
}
