package ipc

import (
	"context"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
	"switchboard/scheduler"
	"switchboard/store"
)

// Backend is everything the tools act through. The gateway implements it;
// ipc never touches the store, the queue or an adapter directly (it
// uses the store's types, never its methods). It is split
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
	Approvals
}

// Approvals asks people whether a call may run (CONTRACT §15, "Approvals").
type Approvals interface {
	// Approve blocks until the call is decided: at once when "Allow for
	// this session" covers it or the group has no approvers (a denial),
	// else when one of the group's approvers (or the operator's CLI)
	// decides, the request times out (approvals.timeout), the group's turn
	// ends or passes its deadline, ctx ends or the gateway stops: each of
	// those but an allow is a denial, with a reason naming who denied it or
	// what ended the wait.
	Approve(ctx context.Context, req ApprovalRequest) ApprovalResult
	// AgentToolAsks reports whether approve_tool asks a person about a
	// call of Claude Code's tool name (approvals.agent_tools); the others
	// are allowed at once.
	AgentToolAsks(name string) bool
}

// ApprovalRequest is a call waiting for a person.
type ApprovalRequest struct {
	Folder groups.Folder
	Tool   string         // the MCP tool, or Claude Code's tool for approve_tool
	Args   map[string]any // the call's arguments (the gateway redacts what it shows)
	Agent  bool           // Tool is one of Claude Code's own (approve_tool)
	Reason string         // why it asks: the deciding grant rule
}

// ApprovalResult is how an approval ended.
type ApprovalResult struct {
	Allowed bool
	ID      string // the request's id ("" when none was stored)
	Reason  string // e.g. "allowed once by web:user/ann", "denied by web:user/ann", "no decision within 10m0s"
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
// a platform with no enabled adapter, one wrapping adapters.ErrNoAdapter.
type Messenger interface {
	// Send queues m in the outbox as sent by folder and waits briefly for the
	// platform to accept it. A running turn of folder is marked as having
	// replied to m.Chat, so its stdout reply to that chat is not sent.
	Send(ctx context.Context, folder groups.Folder, m Outgoing) (Sent, error)
	// RunningTurn returns folder's running turn, if any.
	RunningTurn(folder groups.Folder) (Turn, bool)
	// Edit replaces the text of message messageID in chat (platforms let
	// the bot edit only its own messages) and the stored copy's text.
	Edit(ctx context.Context, chat adapters.JID, messageID adapters.MessageID, text string) error
	// Delete deletes message messageID from chat, and its stored copy.
	Delete(ctx context.Context, chat adapters.JID, messageID adapters.MessageID) error
	// React adds reaction (an emoji or the platform's reaction name) to
	// message messageID in chat.
	React(ctx context.Context, chat adapters.JID, messageID adapters.MessageID, reaction string) error
	// Pin pins message messageID in chat.
	Pin(ctx context.Context, chat adapters.JID, messageID adapters.MessageID) error
	// Unpin unpins message messageID in chat.
	Unpin(ctx context.Context, chat adapters.JID, messageID adapters.MessageID) error
}

// History reads stored (or platform) messages.
type History interface {
	// Messages returns up to limit newest messages of chat with seq <
	// beforeSeq (0: the newest), oldest first.
	Messages(ctx context.Context, chat adapters.JID, beforeSeq int64, limit int) ([]store.Message, error)
	// Thread returns up to limit newest messages of a topic, oldest first.
	Thread(ctx context.Context, chat adapters.JID, topic string, limit int) ([]store.Message, error)
	// FetchHistory reads recent messages from the platform when its adapter
	// can, else from the store; source is "platform" or "store". A message
	// from the platform is as the platform returned it now, with the Seq it
	// is stored under. beforeID pages back: only messages older than that
	// platform id; one the platform cannot page from and the store does not
	// hold is an error.
	FetchHistory(ctx context.Context, chat adapters.JID, beforeID adapters.MessageID, limit int) (msgs []store.Message, source string, err error)
	// Search runs an FTS5 query; a query that does not parse returns an
	// error saying so. o.ChatJIDs nil means all chats; an empty, non-nil
	// slice means none.
	Search(ctx context.Context, query string, o store.SearchOptions) ([]store.Hit, error)
	// Chats lists the JIDs of every chat the gateway has seen.
	Chats(ctx context.Context) ([]adapters.JID, error)
	// MessageByID returns a stored message by its platform id; found is
	// false when chat has no stored message with that id.
	MessageByID(ctx context.Context, chat adapters.JID, id adapters.MessageID) (m store.Message, found bool, err error)
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
	Groups(ctx context.Context) ([]groups.Folder, error)
	// CreateGroup creates folder on behalf of the group caller (of tier)
	// and, when pin is not "", routes that chat to it ahead of every route:
	// the same operation, checks and route as `switchboard group add --jid`
	// (ops.AddGroup). A refusal (an existing group, not a direct child of
	// caller, no parent, a chat caller may not route) creates nothing. The
	// new group's socket exists when the call returns.
	CreateGroup(ctx context.Context, caller groups.Folder, tier int, folder groups.Folder, pin adapters.JID) (route *routing.Route, err error)
	// Enqueue queues a prompt turn and wakes the folder. w gives Folder,
	// ChatJID, Topic, Trigger (store.TriggerDelegate or
	// store.TriggerEscalate), Prompt and Origin (the folder that asked); the
	// gateway sets the rest.
	Enqueue(ctx context.Context, w store.WorkItem) (id int64, err error)
	// SetMidTurn sets folder's mid_turn (queue, steer, interrupt; "": the
	// configured default) on behalf of caller, of tier (ops.SetMidTurn).
	SetMidTurn(ctx context.Context, caller groups.Folder, tier int, folder groups.Folder, mode string) error
}

// Sessions covers the agent-session and engagement state of a folder.
type Sessions interface {
	// Inject stores a synthetic message in a chat and queues a turn of the
	// chat's owner, on behalf of group from (whose running turn it
	// continues: the chain guard counts it); it returns the message and
	// the folder that will answer.
	Inject(ctx context.Context, from groups.Folder, chat adapters.JID, text string, sender adapters.JID) (store.Message, groups.Folder, error)
	// ResetSessions forgets every agent session of folder.
	ResetSessions(ctx context.Context, folder groups.Folder) (int64, error)
	// Engage makes folder answer follow-ups in chat/topic without a mention
	// until the returned time.
	Engage(chat adapters.JID, topic string, folder groups.Folder) (time.Time, error)
	// Disengage ends the engagement in chat/topic and returns the folder
	// that was engaged ("" when none). It ends it only when allowed(folder)
	// holds for that folder.
	Disengage(chat adapters.JID, topic string, allowed func(folder groups.Folder) bool) (folder groups.Folder, ended bool)
	// AgentSessions lists folder's stored agent sessions.
	AgentSessions(ctx context.Context, folder groups.Folder) ([]store.SessionRow, error)
	// Turns returns folder's most recent turn records, newest first.
	Turns(ctx context.Context, folder groups.Folder, limit int) ([]store.Turn, error)
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
	Tasks(ctx context.Context, folder groups.Folder) ([]scheduler.Task, error)
	// SetTaskStatus pauses (StatusPaused), resumes (StatusActive) or
	// cancels (StatusCancelled) a task and returns it. A task already in
	// that status is returned unchanged; a completed or cancelled one cannot
	// change. An unknown id is an error saying no task has it.
	SetTaskStatus(ctx context.Context, id int64, status scheduler.TaskStatus) (scheduler.Task, error)
	// TaskRuns lists up to limit runs of a task, newest first.
	TaskRuns(ctx context.Context, id int64, limit int) ([]store.TaskRun, error)
	// DefaultTimezone is the IANA zone of tasks that name none.
	DefaultTimezone() string
}

// Outgoing is a message a group sends.
type Outgoing struct {
	Chat    adapters.JID
	Text    string
	Topic   string
	ReplyTo adapters.MessageID
	Kind    store.OutboxKind // OutboxSend, OutboxReply or OutboxFile
	File    string           // OutboxFile: a path relative to the group folder, already checked to be a regular file in it; Text is the caption
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
	ID     adapters.MessageID // the platform message id once sent
	Error  string             // why delivery failed, when Status is SentFailed
}

// Turn is a running agent turn.
type Turn struct {
	ID            string
	Chat          adapters.JID
	Topic         string
	Trigger       store.Trigger
	LastMessageID adapters.MessageID // platform id of the batch's last message; "" for prompt turns
}
