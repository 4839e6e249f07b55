package routing

import (
	"switchboard/adapters"
	"switchboard/groups"
)

// Mode says what a matched message does.
type Mode string

const (
	// Trigger: a turn of the target folder runs.
	Trigger Mode = "trigger"
	// Observe: the message is stored as context for the folder's next turn.
	Observe Mode = "observe"
)

// Match keys a route may constrain. Each value is a glob; "*" does not cross "/".
const (
	KeyPlatform = "platform" // part of the chat JID before ':'
	KeyRoom     = "room"     // part of the chat JID after ':'
	KeyChatJID  = "chat_jid"
	KeySender   = "sender"
	KeyVerb     = "verb"
	KeyTopic    = "topic"
)

// MatchKeys lists the valid match keys in display order.
var MatchKeys = []string{KeyPlatform, KeyRoom, KeyChatJID, KeySender, KeyVerb, KeyTopic}

// Route sends matching messages to a group folder.
type Route struct {
	ID     int64             `json:"id"`
	Seq    int               `json:"seq"`
	Match  map[string]string `json:"match"`
	Target groups.Folder     `json:"target"`
	Mode   Mode              `json:"mode"`
}

// Message is what routing looks at in an inbound message.
type Message struct {
	ChatJID adapters.JID
	Sender  adapters.JID
	Verb    adapters.Verb
	Topic   string
}
