// Package adapters defines what a chat platform looks like to the gateway: the
// JID type, the normalized Inbound message, the Outbound request, the small
// Adapter interface every platform implements, and optional capability
// interfaces (edit, delete, react, pin, files, history, typing) discovered by
// type assertion. It is a leaf: platform packages import it, never the reverse.
package adapters

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// JID identifies a chat or a sender: "<platform>:<kind>/<id>...", an opaque
// URI (never "scheme://"). Adapters mint JIDs; everything else treats them as
// opaque apart from Platform and Room.
type JID string

// ParseJID validates s as a JID and returns it.
func ParseJID(s string) (JID, error) {
	platform, rest, ok := strings.Cut(s, ":")
	switch {
	case s == "":
		return "", fmt.Errorf("%w: empty", ErrBadJID)
	case !ok:
		return "", fmt.Errorf("%w %q: want <platform>:<room>, e.g. web:lobby or telegram:group/123", ErrBadJID, s)
	case platform == "" || !isLowerWord(platform):
		return "", fmt.Errorf("%w %q: platform %q must be lowercase letters and digits", ErrBadJID, s, platform)
	case rest == "":
		return "", fmt.Errorf("%w %q: nothing after %q", ErrBadJID, s, platform+":")
	case strings.HasPrefix(rest, "//"):
		return "", fmt.Errorf("%w %q: a JID is <platform>:<room>, not a URL with //", ErrBadJID, s)
	case len(s) > 512:
		return "", fmt.Errorf("%w: longer than 512 bytes", ErrBadJID)
	}
	for _, r := range rest {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(",()*?[]", r) {
			return "", fmt.Errorf("%w %q: character %q is not allowed", ErrBadJID, s, r)
		}
	}
	return JID(s), nil
}

func isLowerWord(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Platform is the part before the first ':' ("telegram").
func (j JID) Platform() string { p, _, _ := strings.Cut(string(j), ":"); return p }

// Room is the part after the first ':' ("group/123").
func (j JID) Room() string { _, r, _ := strings.Cut(string(j), ":"); return r }

func (j JID) String() string { return string(j) }

// Verbs of an inbound message.
const (
	VerbMessage = "message"
	// VerbMention: the bot was mentioned, the chat is a DM, or the message
	// replies to a bot message.
	VerbMention = "mention"
)

// Attachment is a file that came with a message.
type Attachment struct {
	Name string `json:"name,omitempty"`
	MIME string `json:"mime,omitempty"`
	URL  string `json:"url,omitempty"`
	Size int64  `json:"size,omitempty"`
}

// Inbound is one normalized chat message as an adapter hands it to the gateway.
// Its identity is (Chat, ID): platform ids are unique per chat only.
type Inbound struct {
	Chat        JID
	ChatName    string // human name of the chat, if known
	ID          string // platform message id
	Sender      JID
	SenderName  string
	Text        string
	Time        time.Time
	Topic       string // thread / forum topic; "" for none
	ReplyTo     string // platform id of the message this one replies to
	Verb        string // VerbMessage or VerbMention
	FromBot     bool   // the bot's own message echoed back: stored, never triggers
	Attachments []Attachment
}

// DeliverFunc hands an inbound message to the gateway. It returns once the
// message is durably stored, with its store sequence number (a duplicate of a
// stored message returns the original's), or an error if it could not be
// stored; an adapter acknowledges the platform (commits an offset, answers
// 200) only after a nil error. It may block briefly under back-pressure and
// honours ctx.
type DeliverFunc func(ctx context.Context, m Inbound) (seq int64, err error)

// Stored is a message as the store holds it: the inbound fields plus its
// sequence number. The bot's own messages have FromBot set.
type Stored struct {
	Seq int64
	Inbound
}

// Watcher is implemented by adapters that want to know when a message in one
// of their chats was stored (a user's or the bot's own), for example to push
// it to live viewers. Stored must not block.
type Watcher interface {
	Stored(chat JID, seq int64)
}

// Outbound is a message the gateway asks an adapter to post.
type Outbound struct {
	Chat    JID
	Text    string
	Topic   string // post into this thread / forum topic
	ReplyTo string // platform id to reply to, if the platform threads replies
	// Key is an idempotency key unique per reply; adapters that can pass it
	// to the platform (nonce, client id) should.
	Key string
}

// Adapter is the small interface every platform implements.
type Adapter interface {
	// Name is the platform name used in JIDs ("web", "telegram").
	Name() string
	// Run receives messages until ctx is cancelled, calling deliver for each;
	// it reconnects on its own and returns nil on cancellation or an error it
	// cannot recover from (bad token).
	Run(ctx context.Context, deliver DeliverFunc) error
	// Send posts a message and returns its platform id. It blocks until the
	// platform answered. Errors: a *RetryAfterError or any other error is
	// transient (retried later) unless it wraps ErrPermanent.
	Send(ctx context.Context, m Outbound) (id string, err error)
}

// Editor edits a message the bot sent.
type Editor interface {
	Edit(ctx context.Context, chat JID, id, text string) error
}

// Deleter deletes a message.
type Deleter interface {
	Delete(ctx context.Context, chat JID, id string) error
}

// Reactor adds a reaction to a message.
type Reactor interface {
	React(ctx context.Context, chat JID, id, reaction string) error
}

// Pinner pins and unpins messages.
type Pinner interface {
	Pin(ctx context.Context, chat JID, id string) error
	Unpin(ctx context.Context, chat JID, id string) error
}

// FileSender uploads a local file into a chat.
type FileSender interface {
	SendFile(ctx context.Context, chat JID, path, caption string) (id string, err error)
}

// HistoryFetcher reads recent messages from the platform itself.
type HistoryFetcher interface {
	FetchHistory(ctx context.Context, chat JID, limit int) ([]Inbound, error)
}

// Typer shows a typing indicator.
type Typer interface {
	Typing(ctx context.Context, chat JID) error
}
