// Package adapters defines what a chat platform looks like to the gateway: the
// JID and MessageID types, the normalized Inbound event (and its Validate),
// the Outbound request, the small Adapter interface every platform
// implements, the Host a running adapter talks back to, and optional
// capability interfaces (edit, delete, react, pin, files, downloads, history,
// typing, identity, mentions, limits, live replies, buttons) discovered by type assertion. It is
// a leaf: platform packages import it, never the reverse.
//
// docs/adapters.md says how to add a platform and what each capability
// promises.
package adapters

import (
	"context"
	"fmt"
	"io"
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
		return "", fmt.Errorf("%w %q: want <platform>:<room>, e.g. web:lobby or telegram:group/123 (a chat), web:user/ann (a sender)", ErrBadJID, s)
	case platform == "" || !IsPlatformName(platform):
		return "", fmt.Errorf("%w %q: platform %q must be lowercase letters and digits", ErrBadJID, s, platform)
	case rest == "":
		return "", fmt.Errorf("%w %q: nothing after %q", ErrBadJID, s, platform+":")
	case strings.HasPrefix(rest, "//"):
		return "", fmt.Errorf("%w %q: a JID is <platform>:<room>, not a URL with //", ErrBadJID, s)
	case len(s) > 512:
		return "", fmt.Errorf("%w: longer than 512 bytes", ErrBadJID)
	}
	for _, r := range rest {
		if !IsJIDRune(r) {
			return "", fmt.Errorf("%w %q: character %q is not allowed", ErrBadJID, s, r)
		}
	}
	return JID(s), nil
}

// Validate says what is wrong with j, as ParseJID does; nil when it is a
// valid JID.
func (j JID) Validate() error {
	_, err := ParseJID(string(j))
	return err
}

// CheckPerson says, for a JID of a built-in platform that names a chat
// rather than a person (discord:<guild>/<channel>, slack:<team>/channel/C1,
// web:<room>), that it is no sender JID (§4), with the form one takes; nil
// for a person's JID, and for any JID of another platform, whose forms it
// does not know. A JID listed where a person is meant (an approver) that
// is a chat matches no sender ever. Telegram's telegram:group/<id> is a
// sender too: an anonymous group admin, or a member posting as a channel,
// writes as that chat (docs/telegram.md), and such a person's "/approve"
// is decided by listing it.
func (j JID) CheckPerson() error {
	f, known := jidForms[j.Platform()]
	if !known || j.names(f.person) {
		return nil
	}
	return fmt.Errorf("%q is a chat, not a person: a person's JID is %s", string(j), f.personForm)
}

// CheckChat says, for a JID of a built-in platform that names a person
// rather than a chat (web:user/<name>, discord:user/<id>,
// slack:<team>/user/<id>), that it is no chat JID (§4), with the forms a
// chat takes; nil for a chat's JID, and for any JID of another platform.
// Nothing can be posted to such a JID: a message queued for it fails for
// good. Telegram's telegram:user/<id> is both: a private chat's JID is its
// person's.
func (j JID) CheckChat() error {
	f, known := jidForms[j.Platform()]
	if !known || j.names(f.chat) {
		return nil
	}
	return fmt.Errorf("%q is a person, not a chat: a chat's JID is %s", string(j), f.chatForm)
}

// jidForm is what a built-in platform's JIDs name (§4): chat and person
// say whether the part after the platform (Room; Slack's after its team)
// names a chat or a person. Telegram's user/<id> is both (a private
// chat's JID is its person's), and so is group/<id> (an anonymous admin
// writes as the group).
type jidForm struct {
	chat, person         func(rest string) bool
	chatForm, personForm string
}

var jidForms = func() map[string]jidForm {
	user := func(rest string) bool { return strings.HasPrefix(rest, "user/") }
	notUser := func(rest string) bool { return !user(rest) }
	return map[string]jidForm{
		"telegram": {chat: func(string) bool { return true }, chatForm: "telegram:user/<id> or telegram:group/<id>",
			person: func(rest string) bool { return user(rest) || strings.HasPrefix(rest, "group/") }, personForm: "telegram:user/<id>"},
		"discord": {chat: notUser, chatForm: "discord:<guild id>/<channel id> or discord:dm/<channel id>",
			person: user, personForm: "discord:user/<id>"},
		"web": {chat: notUser, chatForm: "web:<room>", person: user, personForm: "web:user/<name>"},
		"slack": {chat: notUser, chatForm: "slack:<team>/channel/<id>, slack:<team>/dm/<id> or slack:<team>/group/<id>",
			person: user, personForm: "slack:<team>/user/<id>"},
	}
}()

// names applies one of a jidForm's tests to j: to its Room, or on Slack
// to what follows the team.
func (j JID) names(test func(rest string) bool) bool {
	rest := j.Room()
	if j.Platform() == "slack" {
		_, rest, _ = strings.Cut(rest, "/")
	}
	return test(rest)
}

// IsJIDRune reports whether r may appear after a JID's platform: anything
// but spaces, control characters and ",()*?[]" (glob and list syntax).
func IsJIDRune(r rune) bool {
	return r > ' ' && r != 0x7f && !strings.ContainsRune(",()*?[]", r)
}

// IsPlatformName reports whether s has only a platform name's characters:
// lowercase ASCII letters and digits.
func IsPlatformName(s string) bool {
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

// MessageID is a platform's id of a message, minted by the adapter: unique
// within its chat only, so a message's identity is (JID, MessageID).
type MessageID string

func (id MessageID) String() string { return string(id) }

// Verb says whether an inbound message addresses the bot; routes match on
// it (match key "verb").
type Verb string

// Verbs of an inbound message.
const (
	VerbMessage Verb = "message"
	// VerbMention: the bot was mentioned, the chat is a DM, or the message
	// replies to a bot message.
	VerbMention Verb = "mention"
)

// Kind is what an Inbound event does to the store.
type Kind string

const (
	// KindMessage is a new message (the zero Kind means KindMessage). It is
	// stored once per (Chat, ID) and may start a turn.
	KindMessage Kind = "message"
	// KindEdit replaces the text (and attachments) of the stored message
	// (Chat, ID); it never starts a turn. An edit of a message that was
	// never stored is stored as a message that starts no turn.
	KindEdit Kind = "edit"
	// KindDelete marks the stored message (Chat, ID) deleted; it never
	// starts a turn. Only Chat, ID and Time are read.
	KindDelete Kind = "delete"
	// KindReaction records Sender's Reaction on the message (Chat, ID), or
	// removes it when ReactionRemoved. It never starts a turn; a reaction to
	// one of the bot's messages shows in the owning folder's next prompt.
	KindReaction Kind = "reaction"
)

// Name is the kind's name for logs, errors and metrics: the zero Kind is
// "message".
func (k Kind) Name() string {
	if k == "" {
		return string(KindMessage)
	}
	return string(k)
}

// Attachment is a file that came with a message. Ref is opaque to everything
// but the adapter that minted it (a file id, a path without credentials); it
// never holds a token or a URL that grants access by itself. The adapter's
// Downloader fetches it.
type Attachment struct {
	Name string `json:"name,omitempty"`
	MIME string `json:"mime,omitempty"`
	Size int64  `json:"size,omitempty"` // bytes; 0 when the platform does not say
	Ref  string `json:"ref,omitempty"`
}

// Inbound is one normalized event as an adapter hands it to the gateway: a
// new message, an edit, a delete or a reaction. Its target's identity is
// (Chat, ID): platform ids are unique per chat only.
type Inbound struct {
	Kind        Kind // "" is KindMessage
	Chat        JID
	ChatName    string    // human name of the chat, if known
	ID          MessageID // platform message id (of the message edited, deleted or reacted to, for those kinds)
	Sender      JID
	SenderName  string
	Text        string
	Time        time.Time
	Topic       string    // thread / forum topic; "" for none
	ReplyTo     MessageID // platform id of the message this one replies to
	Verb        Verb      // VerbMessage or VerbMention
	FromBot     bool      // the bot's own message echoed back: stored, never triggers
	OtherBot    bool      // sent by another bot or a webhook: stored and marked, never triggers
	Attachments []Attachment

	// ToOtherBot marks a command addressed to another bot (Telegram's
	// "/stop@other_bot", "/approve@other_bot ID" in a group): an ordinary
	// message, routed as any, never a command to this bot (stop, approve,
	// deny).
	ToOtherBot bool

	Reaction        string // KindReaction: the emoji (unicode, or a custom emoji's name)
	ReactionRemoved bool   // KindReaction: the reaction was taken back

	// Backfilled marks a message fetched from the platform's history after
	// downtime rather than received live: it triggers a turn only when it is
	// younger than BackfillTriggerAge, else it is stored as context.
	Backfilled bool

	// FromHost marks a message posted from the gateway's own machine (the
	// web chat: a loopback or local address), where an agent with network
	// can post too. The web-room loop guard counts only these.
	FromHost bool
}

// BackfillTriggerAge: backfilled messages older than this do not trigger.
const BackfillTriggerAge = 10 * time.Minute

// DeliverFunc hands an inbound event to the gateway. It returns once the
// event is durably stored, with the store sequence number of the message it
// concerns (a duplicate of a stored message returns the original's; a delete
// or reaction of an unknown message returns 0), or an error if it could not
// be stored; an adapter acknowledges the platform (commits an offset, answers
// 200, acks an envelope) only after a nil error. An error wrapping
// ErrBadMessage means the event is garbage and will never be stored: log it
// and acknowledge anyway. An error wrapping *RetryAfterError means it was
// refused for now (the web-room loop guard) and may be sent again after
// Wait; its text says why. It may block briefly under back-pressure and
// honours ctx.
type DeliverFunc func(ctx context.Context, m Inbound) (seq int64, err error)

// State is an adapter's connection state as shown by `switchboard status`
// and /readyz.
type State string

const (
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	// StateBackingOff: lost the connection, waiting to reconnect; or, with
	// an error wrapping *RetryAfterError, connected but holding every
	// request for a platform's 429 (Hold): the gateway shows it for the
	// error's Wait, then the connection's state again.
	StateBackingOff State = "backing_off"
	StateFailed     State = "failed" // will not reconnect on its own (bad token); Run returned
)

// ChatCursor is the newest stored message of a chat, where backfill starts.
type ChatCursor struct {
	Chat   JID
	LastID MessageID // platform id of the newest stored message; "" when none
	Last   time.Time // its time; zero when none
}

// Host is what the gateway gives a running adapter. Its methods are safe for
// concurrent use.
type Host interface {
	// Deliver is the DeliverFunc.
	Deliver(ctx context.Context, m Inbound) (seq int64, err error)
	// SetState reports a connection change; err is the reason for
	// StateBackingOff and StateFailed (nil otherwise). It never blocks.
	SetState(s State, err error)
	// Value reads a small value the adapter persisted under key (an update
	// offset, a seen event id); ok is false when there is none or it expired.
	Value(ctx context.Context, key string) (value string, ok bool, err error)
	// SetValue persists value under key, in this adapter's own namespace,
	// for ttl (0: until overwritten). Commit an offset only after the
	// events before it were delivered.
	SetValue(ctx context.Context, key, value string, ttl time.Duration) error
	// RoutedChats lists this adapter's chats that a route owns, with their
	// newest stored message: what backfill after downtime walks.
	RoutedChats(ctx context.Context) ([]ChatCursor, error)
	// Press hands the gateway a press of one of the bot's buttons (see
	// Buttons) and returns a short plain text for the presser alone ("not
	// yours to approve", "allowed"): the adapter shows it privately where
	// the platform can (a callback answer, an ephemeral message, the HTTP
	// response), and otherwise drops it. It returns quickly (no platform
	// call is made before it returns), so an adapter may call it before
	// acknowledging the platform; the gateway edits the message afterwards.
	// An error wrapping ErrBadMessage: the press is garbage, acknowledge it.
	// An error wrapping ErrUnknownRequest comes with the answer to show:
	// the press names a request that does not exist.
	Press(ctx context.Context, p Press) (answer string, err error)
}

// Stored is a message as the store holds it: the inbound fields plus its
// sequence number. The bot's own messages have FromBot set.
type Stored struct {
	Seq     int64
	Deleted bool
	Inbound
}

// Watcher is implemented by adapters that want to know when a message in one
// of their chats was stored (a user's or the bot's own), for example to push
// it to live viewers. Stored must not block.
type Watcher interface {
	Stored(chat JID, seq int64)
}

// Outbound is a message the gateway asks an adapter to post. Text is
// Markdown, already split to fit Limits.MaxText: the adapter renders it to
// its platform's format and, when the platform refuses the formatting, sends
// it again as plain text (markdown.Plain) rather than failing.
type Outbound struct {
	Chat    JID
	Text    string
	Topic   string    // post into this thread / forum topic
	ReplyTo MessageID // platform id to reply to, if the platform threads replies
	// ReplyToSender is the author of ReplyTo (the JID the adapter gave the
	// message's Sender), when the gateway knows it: whom the reply
	// answers. The gateway sets it from its store, so it holds after a
	// restart; a Slack live reply's stream names its recipient by it.
	ReplyToSender JID
	// Key is an idempotency key unique per message part; adapters that can
	// pass it to the platform (nonce, client id) should.
	Key string
	// Buttons are buttons a live reply carries while it runs (a turn's
	// Stop button), given to Streamer.StartLive only: a live reply that
	// can carry them says so (ButtonCarrier) and removes them at its end.
	// Send ignores them (buttons on a message: Buttons.SendButtons).
	Buttons []Button
}

// MessageRef names a message the bot acts on. Topic is the stored message's
// topic (a Discord thread's channel id, a Slack thread_ts), for platforms
// that need it to address the message.
type MessageRef struct {
	Chat  JID
	Topic string
	ID    MessageID
}

// Adapter is the small interface every platform implements.
//
// Errors of Send and of every capability method: a *RetryAfterError is a
// rate limit (the gateway pauses all of this adapter's sends for its Wait);
// an error wrapping ErrPermanent will never succeed (bot kicked, chat not
// found) and is fed back to the folder; ErrUnsupported, wrapped with the
// platform name, means the platform lacks the verb; anything else is
// transient and retried with backoff.
type Adapter interface {
	// Name is the platform name used in JIDs ("web", "telegram").
	Name() string
	// Run connects and receives events until ctx is cancelled, handing
	// each to host.Deliver and reporting its connection state through
	// host.SetState. It reconnects on its own (with the SDK's backoff)
	// and returns nil on cancellation. It returns an error only when it
	// cannot go on: an error wrapping ErrBadToken at start is a start-up
	// error; any other the gateway logs and restarts Run after a capped,
	// jittered backoff.
	Run(ctx context.Context, host Host) error
	// Send posts one message part and returns its platform id. It blocks
	// until the platform answered.
	Send(ctx context.Context, m Outbound) (id MessageID, err error)
}

// Identity is implemented by adapters that know their bot's own sender JID
// once connected (for example telegram:user/<bot id>). The gateway stores the
// bot's messages under it and treats inbound messages from it as the bot's
// own echo. ok is false until known. It must not block.
type Identity interface {
	Self() (jid JID, ok bool)
}

// Mentioner is implemented by adapters whose Inbound text shows a mention
// of their bot as one word (Telegram "@<bot username>", Slack "@<handle>",
// Discord "@<name_with_underscores>" or its managed role's "<@&id>"). The
// gateway takes the stop and approval commands that follow a mention
// ("@bot stop", "@bot /approve ID") only after the bot's own: after anyone
// else's the message is an ordinary one, even when it addresses the bot
// otherwise (a reply to its message). known is false while the adapter
// cannot tell (not connected yet); the gateway then takes any mention, as
// it does for an adapter without Mentioner (the web chat). It must not
// block.
type Mentioner interface {
	MentionsSelf(word string) (self, known bool)
}

// Format says how a platform renders message text.
type Format string

const (
	FormatPlain    Format = "plain"    // no markup
	FormatMarkdown Format = "markdown" // the platform renders Markdown itself (Discord, web)
	FormatHTML     Format = "html"     // Telegram's HTML subset
	FormatMrkdwn   Format = "mrkdwn"   // Slack
)

// Limits describe what one message may hold on a platform.
type Limits struct {
	// MaxText is the longest part, in UTF-16 code units (the strictest of
	// the platforms' measures) of what the platform counts: the Markdown
	// source, or what Measure says. The gateway splits longer text with
	// SplitRendered. 0: no limit.
	MaxText int
	// Measure, when set, is a part's length as the platform counts it once
	// the adapter rendered it (tags it does not show left out, escapes as
	// what they show), the longer of the formatted rendering and its plain
	// fallback. nil: the source's UTF16Len.
	Measure func(markdown string) int
	// Format is what the adapter renders Markdown to (informational).
	Format Format
	// TypingEvery is how often a typing indicator must be repeated to stay
	// visible while a turn runs (Telegram: 4s). 0: send it once.
	TypingEvery time.Duration
}

// Threader is implemented by adapters whose platform puts a reply to a
// message outside any topic into a new topic under it (Slack: a reply to a
// top-level channel message starts a thread). ReplyTopic is the topic that
// m (with m.ReplyTo set) lands in; "" when it stays where m.Topic says. The
// gateway sends every part of the reply there, stores the bot's message
// under that topic, and counts it as where the bot spoke. It does not block.
type Threader interface {
	ReplyTopic(m Outbound) string
}

// Limiter is implemented by adapters whose platform limits message length.
type Limiter interface {
	Limits() Limits
}

// Editor edits a message the bot sent; text is Markdown, rendered like Send.
type Editor interface {
	Edit(ctx context.Context, m MessageRef, text string) error
}

// Deleter deletes a message.
type Deleter interface {
	Delete(ctx context.Context, m MessageRef) error
}

// Reactor adds a reaction to a message. An emoji the platform does not
// accept is an error wrapping ErrPermanent that says which it accepts.
type Reactor interface {
	React(ctx context.Context, m MessageRef, reaction string) error
}

// Pinner pins and unpins messages.
type Pinner interface {
	Pin(ctx context.Context, m MessageRef) error
	Unpin(ctx context.Context, m MessageRef) error
}

// File is an open file to upload. Content is read once; the gateway opened it
// inside the group folder (no path ever reaches the adapter) and closes it.
type File struct {
	Name    string // base name
	MIME    string // sniffed or from the extension; may be ""
	Size    int64
	Content io.Reader
}

// FileSender uploads a file into a chat. m.Text is the caption (Markdown,
// may be empty); m.Topic and m.ReplyTo place it like Send.
type FileSender interface {
	SendFile(ctx context.Context, m Outbound, f File) (id MessageID, err error)
}

// Pacer is implemented by an adapter that spaces its sends to a chat to
// keep under the platform's rate limits (Telegram: one message a second in
// a private chat, twenty a minute in a group). SendDue is how long a Send
// to chat would wait for its turn now (0: none); it reserves nothing and
// does not block. The outbox hands the adapter a reply only once it is due:
// one that waits for its turn stays queued, so a crash meanwhile leaves it
// to be sent after the restart, where one handed over (in flight, maybe
// arrived) is never sent again.
type Pacer interface {
	SendDue(chat JID) time.Duration
}

// StoreDelivered is implemented by an adapter whose Send and SendFile show
// nothing by themselves: a message appears in the chat only once the
// gateway stores it as the bot's (the web chat, whose rooms are read from
// the store). A delivery that a crash cut short therefore cannot have
// arrived, and the next start sends it again instead of failing it: the
// outbox's at-most-once rule is for platforms that may have shown it.
type StoreDelivered interface {
	DeliveredWhenStored()
}

// Downloader fetches an attachment this adapter minted. The gateway reads at
// most its size cap from the returned reader and closes it.
type Downloader interface {
	Download(ctx context.Context, a Attachment) (io.ReadCloser, error)
}

// HistoryQuery selects messages of one chat from the platform's history.
type HistoryQuery struct {
	Topic  string    // only this thread; "" for the chat's main timeline
	Before MessageID // only messages older than this platform id; "" for the newest
	After  MessageID // only messages newer than this platform id (backfill); "" for no bound
	Since  time.Time // only messages at or after this time; zero for no bound
	Limit  int       // at most this many (the adapter may cap it further)
}

// HistoryFetcher reads messages from the platform itself, oldest first. The
// gateway stores what it returns (de-duplicated), so fetching fills gaps.
type HistoryFetcher interface {
	FetchHistory(ctx context.Context, chat JID, q HistoryQuery) ([]Inbound, error)
}

// Typer shows a typing indicator in a chat (and topic) for a while; see
// Limits.TypingEvery. Errors are logged and otherwise ignored.
type Typer interface {
	Typing(ctx context.Context, chat JID, topic string) error
}

// Streamer is implemented by adapters that show a reply growing while a turn
// runs, natively (a Telegram draft, a message edited in place, draft objects
// on the web chat's event stream). The gateway finds it by type assertion;
// for an adapter without it, or whose StartLive or first Update answers
// ErrUnsupported (not here: fall back), it shows the live reply with the
// generic fallback: Send of the first text, then Editor.Edit of that message
// at every update, the final being its last edit (no live reply at all when
// the adapter is no Editor either).
//
// StartLive does not call the platform and does not block: the first
// Update (or Finish) shows the reply. m names the chat, the topic and the
// message replied to; m.Text is unused; m.Key is the idempotency key of the
// final message. turn identifies the turn, unique per chat; the adapter may
// show it or derive a platform id from it (a Telegram draft_id). An error
// wraps ErrPermanent (not a chat of this adapter) or ErrUnsupported.
type Streamer interface {
	StartLive(ctx context.Context, m Outbound, turn string) (LiveReply, error)
}

// ButtonCarrier is implemented by a LiveReply that can carry the buttons of
// the Outbound it was started with (Outbound.Buttons): a message the bot
// edits (adapters.EditLive with SendButtons and EditButtons; a Telegram
// group's, a Discord one, Slack's edited message, the gateway's edit
// fallback), or the web chat's draft. Its message shows them from its
// first send and keeps them at every update; Finish's text and Abort take
// them away. A live reply that cannot carry them (a Telegram private
// chat's draft, a Slack stream) does not implement it or
// answers false, and the gateway shows them another way (a message of
// their own). It does not block.
type ButtonCarrier interface {
	// CarriesButtons reports whether the live reply shows the buttons
	// while it runs; the answer may change once (a native live reply the
	// platform refused became an edited message).
	CarriesButtons() bool
}

// LiveReply is one turn's live reply in one chat. Drafts are never stored as
// messages: only the final one is, under the id Finish returns. Its methods
// block until the platform answered (Finish and Abort through the adapter's
// own pacing; an Update the pacing would hold is refused at once with
// NotDue's *RetryAfterError instead, so that it never shows a text grown
// old while it waited) and are serialized; the gateway calls them from one goroutine, at most one
// Update per stream interval. Errors are those of Send: a *RetryAfterError
// showed nothing and paces the caller, who calls again after Wait with the
// newest text (each call carries the whole text, so nothing is lost); an
// error wrapping ErrPermanent will not succeed; ErrUnsupported (from the
// first Update only) means the platform refused to stream here: Abort and
// fall back to Send and Edit; anything else is transient.
type LiveReply interface {
	// Update replaces what the live reply shows with text: the whole reply
	// so far, Markdown within Limits.MaxText. It may be cut anywhere (an
	// unclosed code fence or emphasis): the adapter renders it with
	// markdown.Partial. Text that is empty or blank shows nothing.
	Update(ctx context.Context, text string) error
	// Finish shows text (Markdown within Limits.MaxText; not a partial) as
	// the reply's final message and returns its platform id, under which
	// the gateway stores it: that message is the delivery, exactly once.
	// After a successful Finish, Finish returns the same id and sends
	// nothing, and Update returns ErrLiveEnded. After an error nothing is
	// final and Finish may be called again.
	Finish(ctx context.Context, text string) (MessageID, error)
	// Abort ends the live reply with nothing final: the gateway delivers the
	// final another way (Send, files), or the turn said nothing. The adapter
	// removes what it showed where it can (a message it sent is deleted; a
	// Telegram draft vanishes on its own). After Finish, or a first Abort,
	// it does nothing. After Abort, Finish returns ErrLiveEnded.
	Abort(ctx context.Context) error
}
