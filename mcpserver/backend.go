package mcpserver

import (
	"context"
	"time"

	"switchboard/adapters"
	"switchboard/routing"
	"switchboard/scheduler"
)

// Backend is everything the tools act through. The gateway implements it;
// mcpserver never touches the store, the queue or an adapter directly. It is split
// into small interfaces by concern so that each method's contract sits next
// to its neighbours; one gateway type implements them all.
type Backend interface {
	State
	Messenger
	History
	RouteStore
	GroupStore
	Sessions
	TaskStore
	Spend
}

// State is the gateway's live configuration.
type State interface {
	// Table is the current route table (nil means empty). It changes when
	// routes change; callers must not keep it across calls.
	Table() *routing.Table
	// Reload re-reads groups, routes and grant overrides now (and syncs the
	// MCP sockets) instead of waiting for the next poll.
	Reload(ctx context.Context) error
}

// Messenger sends and acts on chat messages.
//
// The message verbs (Edit, Delete, React, Pin, Unpin) act through the
// adapter of chat's platform. A platform whose adapter lacks the capability
// returns an error wrapping adapters.ErrUnsupported that names the platform;
// a platform with no enabled adapter, one wrapping ErrNoAdapter.
type Messenger interface {
	// Send queues m in the outbox as sent by folder and waits briefly for the
	// platform to accept it. A running turn of folder is marked as having
	// replied to m.Chat, so its stdout reply to that chat is not sent.
	Send(ctx context.Context, folder string, m Outgoing) (Sent, error)
	// RunningTurn returns folder's running turn, if any.
	RunningTurn(folder string) (Turn, bool)
	// Edit replaces the text of message messageID in chat (platforms let
	// the bot edit only its own messages) and the stored copy's text.
	Edit(ctx context.Context, chat, messageID, text string) error
	// Delete deletes message messageID from chat, and its stored copy.
	Delete(ctx context.Context, chat, messageID string) error
	// React adds reaction (an emoji or the platform's reaction name) to
	// message messageID in chat.
	React(ctx context.Context, chat, messageID, reaction string) error
	// Pin pins message messageID in chat.
	Pin(ctx context.Context, chat, messageID string) error
	// Unpin unpins message messageID in chat.
	Unpin(ctx context.Context, chat, messageID string) error
}

// History reads stored (or platform) messages.
type History interface {
	// Messages returns up to limit newest messages of chat with seq <
	// beforeSeq (0: the newest), oldest first.
	Messages(ctx context.Context, chat string, beforeSeq int64, limit int) ([]Message, error)
	// Thread returns up to limit newest messages of a topic, oldest first.
	Thread(ctx context.Context, chat, topic string, limit int) ([]Message, error)
	// FetchHistory reads recent messages from the platform when its adapter
	// can, else from the store; source is "platform" or "store".
	// beforeID pages back: only messages older than that platform id; one
	// the platform cannot page from and the store does not hold is an error.
	FetchHistory(ctx context.Context, chat, beforeID string, limit int) (msgs []Message, source string, err error)
	// Search runs an FTS5 query; a query that does not parse returns an
	// error saying so.
	Search(ctx context.Context, query string, o SearchOptions) ([]Hit, error)
	// Chats lists the JIDs of every chat the gateway has seen.
	Chats(ctx context.Context) ([]string, error)
	// MessageByID returns a stored message by its platform id; found is
	// false when chat has no stored message with that id.
	MessageByID(ctx context.Context, chat, id string) (m Message, found bool, err error)
}

// RouteStore changes the routing table. Every change is visible in Table
// when the call returns.
type RouteStore interface {
	AddRoute(ctx context.Context, r routing.Route) (routing.Route, error)
	// DeleteRoute deletes a route and returns it; found is false, and
	// nothing changes, when no route has that id.
	DeleteRoute(ctx context.Context, id int64) (r routing.Route, found bool, err error)
	// SwapRoutes deletes the routes with ids remove and adds add, in one
	// transaction: all or nothing. swapped is false, and nothing changes,
	// when a route of remove no longer exists.
	SwapRoutes(ctx context.Context, remove []int64, add []routing.Route) (added []routing.Route, swapped bool, err error)
}

// GroupStore lists, creates and queues work for groups.
type GroupStore interface {
	Groups(ctx context.Context) ([]string, error)
	// CreateGroup stores a new group and sets up its folder; its socket
	// exists when the call returns. created is false, and no group is
	// added, when the group already exists.
	CreateGroup(ctx context.Context, folder string) (created bool, err error)
	// Enqueue queues a prompt turn (delegate, escalate) and wakes the folder.
	Enqueue(ctx context.Context, w Work) (id int64, err error)
}

// Sessions covers the agent-session and engagement state of a folder.
type Sessions interface {
	// Inject stores a synthetic message in a chat and queues a turn of the
	// chat's owner, on behalf of group from (whose running turn it
	// continues: the chain guard counts it); it returns the message and
	// the folder that will answer.
	Inject(ctx context.Context, from, chat, text, sender string) (Message, string, error)
	// ResetSessions forgets every agent session of folder.
	ResetSessions(ctx context.Context, folder string) (int64, error)
	// Engage makes folder answer follow-ups in chat/topic without a mention
	// until the returned time.
	Engage(chat, topic, folder string) (time.Time, error)
	// Disengage ends the engagement in chat/topic and returns the folder
	// that was engaged ("" when none). It ends it only when allowed(folder)
	// holds for that folder.
	Disengage(chat, topic string, allowed func(folder string) bool) (folder string, ended bool)
	// AgentSessions lists folder's stored agent sessions.
	AgentSessions(ctx context.Context, folder string) ([]AgentSession, error)
	// Turns returns folder's most recent turn records, newest first.
	Turns(ctx context.Context, folder string, limit int) ([]TurnRecord, error)
}

// TaskStore manages scheduled tasks through the same code as the task CLI,
// and wakes the scheduler after every change so it takes effect at once.
type TaskStore interface {
	// AddTask validates spec and stores the task. A bad spec returns an
	// error that starts with the field's name (schedule, timezone,
	// context_mode, missed, prompt, folder).
	AddTask(ctx context.Context, spec scheduler.TaskSpec) (scheduler.Task, error)
	// Task returns one task; found is false when no task has that id.
	Task(ctx context.Context, id int64) (t scheduler.Task, found bool, err error)
	// Tasks lists the tasks of folder and its subgroups, oldest first; ""
	// lists every task.
	Tasks(ctx context.Context, folder string) ([]scheduler.Task, error)
	// SetTaskStatus pauses (StatusPaused), resumes (StatusActive) or
	// cancels (StatusCancelled) a task and returns it. A task already in
	// that status is returned unchanged; a completed or cancelled one cannot
	// change. An unknown id is an error saying no task has it.
	SetTaskStatus(ctx context.Context, id int64, status scheduler.TaskStatus) (scheduler.Task, error)
	// TaskRuns lists up to limit runs of a task, newest first.
	TaskRuns(ctx context.Context, id int64, limit int) ([]TaskRun, error)
	// DefaultTimezone is the IANA zone of tasks that name none.
	DefaultTimezone() string
}

// TaskRun is one run of a task.
type TaskRun struct {
	ID       int64
	Slot     time.Time // the scheduled time this run is for
	Status   string    // fired (claimed; its turn is queued or running), succeeded, failed, or skipped (a budget was used up; Error says which)
	Started  time.Time
	Duration time.Duration
	TurnID   string
	Error    string
	CostUSD  float64 // what its turn reported costing
}

// OutgoingKind says what an Outgoing is.
type OutgoingKind string

// Kinds of Outgoing.
const (
	KindSend  OutgoingKind = "send"  // a new message
	KindReply OutgoingKind = "reply" // an answer to ReplyTo
	KindFile  OutgoingKind = "file"  // an upload of File
)

// Outgoing is a message a group sends.
type Outgoing struct {
	Chat    string
	Text    string
	Topic   string
	ReplyTo string
	Kind    OutgoingKind
	File    string // KindFile: a path relative to the group folder, already checked to be a regular file in it; Text is the caption
}

// SentStatus says what became of an Outgoing when Send returned.
type SentStatus string

// Statuses of a Sent.
const (
	SentOK      SentStatus = "sent"    // the platform accepted it
	SentPending SentStatus = "pending" // queued, not yet accepted; delivered in order, at most once
	SentFailed  SentStatus = "failed"  // refused for good
)

// Sent says what became of an Outgoing when Send returned.
type Sent struct {
	Key    string // the outbox idempotency key
	Status SentStatus
	ID     string // the platform message id once sent
	Error  string // why delivery failed, when Status is SentFailed
}

// Turn is a running agent turn.
type Turn struct {
	ID            string
	Chat          string
	Topic         string
	Trigger       string
	LastMessageID string // platform id of the batch's last message; "" for prompt turns
}

// Message is a chat message as the history tools show it.
type Message struct {
	Seq         int64                 `json:"seq,omitempty"`
	ChatJID     string                `json:"chat_jid"`
	ID          string                `json:"id"`
	Sender      string                `json:"sender"`
	Name        string                `json:"name,omitempty"`
	Text        string                `json:"text"`
	Time        time.Time             `json:"time"`
	Topic       string                `json:"topic,omitempty"`
	ReplyTo     string                `json:"reply_to,omitempty"`
	Verb        string                `json:"verb,omitempty"`
	FromBot     bool                  `json:"from_bot,omitempty"`
	Attachments []adapters.Attachment `json:"attachments,omitempty"`
}

// SearchOptions narrow a search. Chats nil means all chats; an empty,
// non-nil slice means none.
type SearchOptions struct {
	Chats  []string
	Sender string
	Since  time.Time
	Limit  int
}

// Hit is one search result.
type Hit struct {
	Message
	Snippet string  `json:"snippet"`
	Rank    float64 `json:"rank"`
}

// Work is a prompt turn queued for a folder.
type Work struct {
	Folder  string
	Chat    string
	Topic   string
	Trigger string // "delegate" or "escalate"
	Prompt  string
	Origin  string // the folder that asked
}

// AgentSession is the agent session a folder continues in a chat and topic.
type AgentSession struct {
	Chat      string    `json:"chat_jid"`
	Topic     string    `json:"topic,omitempty"`
	SessionID string    `json:"session_id"`
	Updated   time.Time `json:"updated"`
}

// TurnRecord is a finished turn.
type TurnRecord struct {
	ID         string    `json:"id"`
	Chat       string    `json:"chat_jid"`
	Topic      string    `json:"topic,omitempty"`
	Trigger    string    `json:"trigger"`
	Attempt    int       `json:"attempt"`
	Started    time.Time `json:"started"`
	DurationMS int64     `json:"duration_ms"`
	Status     string    `json:"status"`
	Error      string    `json:"error,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`
	// What the turn cost, as its agent reported it (omitted: not reported).
	CostUSD             float64 `json:"cost_usd,omitempty"`
	InputTokens         int64   `json:"input_tokens,omitempty"`
	OutputTokens        int64   `json:"output_tokens,omitempty"`
	CacheCreationTokens int64   `json:"cache_creation_tokens,omitempty"`
	CacheReadTokens     int64   `json:"cache_read_tokens,omitempty"`
	NumTurns            int64   `json:"num_turns,omitempty"`
	APIMS               int64   `json:"api_ms,omitempty"`
}
