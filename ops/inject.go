package ops

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
	"switchboard/store"
)

// InjectRequest is a synthetic inbound message addressed to a folder.
type InjectRequest struct {
	Chat    adapters.JID
	Text    string
	Sender  adapters.JID  // default "switchboard:user/operator"
	Folder  groups.Folder // default: the chat's owner
	Trigger store.Trigger // default store.TriggerInject
	Origin  groups.Folder // the group whose agent injected it ("" for the operator)
	Chain   int           // its depth in a chain of agent-started turns (store.WorkItem.Chain)
}

// Inject stores a synthetic message in chat and queues a turn of the chat's
// owner (or req.Folder), bypassing trigger rules. It works with or without a
// running gateway: a running one picks the work up within its poll interval.
func Inject(ctx context.Context, st *store.Store, t *routing.Table, req InjectRequest) (store.Message, groups.Folder, error) {
	if err := req.Chat.Validate(); err != nil {
		return store.Message{}, "", err
	}
	if strings.TrimSpace(req.Text) == "" {
		return store.Message{}, "", fmt.Errorf("%w: text is empty", adapters.ErrBadMessage)
	}
	folder := req.Folder
	if folder == "" {
		owner, ok := t.Owner(req.Chat, "")
		if !ok {
			return store.Message{}, "", fmt.Errorf("inject into %s: %w; add a route for it first", req.Chat, ErrNoOwner)
		}
		folder = owner
	}
	sender := req.Sender
	if sender == "" {
		sender = "switchboard:user/operator"
	}
	trigger := req.Trigger
	if trigger == "" {
		trigger = store.TriggerInject
	}
	name := sender.String()[strings.LastIndexByte(sender.String(), '/')+1:]
	in := adapters.Inbound{Chat: req.Chat, ID: adapters.MessageID(store.NewID("inj-")), Sender: sender,
		SenderName: name, Text: req.Text, Verb: adapters.VerbMention}
	if err := in.Validate(); err != nil {
		return store.Message{}, "", err
	}
	m := StoreMessage(in)
	work := []store.WorkItem{{Folder: folder, ChatJID: req.Chat, Mode: string(routing.Trigger), Trigger: trigger, Origin: req.Origin, Chain: req.Chain}}
	if _, err := st.EnqueueMessage(ctx, &m, work); err != nil {
		return store.Message{}, "", fmt.Errorf("inject into %s: %w", req.Chat, err)
	}
	return m, folder, nil
}

// SendRequest is an outbound message queued in the outbox.
type SendRequest struct {
	Chat    adapters.JID
	Text    string
	Topic   string
	ReplyTo adapters.MessageID
	Folder  groups.Folder    // who sent it (for delivery-failure notices); "" for the operator
	Key     string           // idempotency key; generated when empty
	Kind    store.OutboxKind // store.OutboxSend when empty
	File    string           // kind file: the file, relative to Folder's directory; Text is the caption
}

// QueueSend writes a message to the outbox. Delivery happens in the running
// gateway (at once if it is this process, else within its poll interval).
func QueueSend(ctx context.Context, st *store.Store, req SendRequest) (store.OutboxItem, error) {
	if err := req.Chat.Validate(); err != nil {
		return store.OutboxItem{}, err
	}
	if req.File != "" {
		req.Kind = store.OutboxFile
		if req.Folder == "" || !filepath.IsLocal(req.File) {
			return store.OutboxItem{}, fmt.Errorf("send file to %s: the file must be inside the sending group's folder", req.Chat)
		}
	} else if strings.TrimSpace(req.Text) == "" {
		return store.OutboxItem{}, fmt.Errorf("send to %s: text is empty", req.Chat)
	}
	if req.Key == "" {
		req.Key = store.NewID("send-")
	}
	if req.Kind == "" {
		req.Kind = store.OutboxSend
	}
	return st.AddOutbox(ctx, store.OutboxItem{Key: req.Key, Kind: req.Kind, Folder: req.Folder, ChatJID: req.Chat,
		Topic: req.Topic, ReplyTo: req.ReplyTo, Text: store.CapText(strings.ToValidUTF8(req.Text, "\uFFFD")), FilePath: req.File})
}
