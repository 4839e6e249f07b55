package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"switchboard/adapters"
)

var _ adapters.Buttons = (*Adapter)(nil)

// buttonView is a button as the message JSON carries it.
type buttonView struct {
	Label string `json:"label"`
	Data  string `json:"data"`
	Style string `json:"style,omitempty"`
}

// A message sent with buttons has an id starting "k-"; its buttons are kept
// with Host.SetValue under buttonsKey (so they survive a reload and a
// restart), and only such messages are looked up.
const (
	buttonsPrefix = "k-"
	// goneTTL is how long a message's "no buttons any more" is kept; after
	// it the key is gone, which reads the same.
	goneTTL = 24 * time.Hour
	// maxCached bounds the in-memory copy of the persisted buttons.
	maxCached = 4096
)

func buttonsKey(chat adapters.JID, id adapters.MessageID) string {
	return "buttons:" + chat.Room() + "/" + id.String()
}

// buttonStore is the persisted buttons of messages, with a write-through
// cache (one gateway per data directory: nobody else writes them).
type buttonStore struct {
	mu    sync.Mutex
	host  adapters.Host // set by Run
	cache map[string][]buttonView
}

func (b *buttonStore) setHost(h adapters.Host) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.host = h
}

// running is the host Run set, nil before.
func (b *buttonStore) running() adapters.Host {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.host
}

func (b *buttonStore) get(ctx context.Context, chat adapters.JID, id adapters.MessageID) []buttonView {
	if !strings.HasPrefix(id.String(), buttonsPrefix) {
		return nil
	}
	key := buttonsKey(chat, id)
	b.mu.Lock()
	v, ok := b.cache[key]
	h := b.host
	b.mu.Unlock()
	if ok || h == nil {
		return v
	}
	raw, found, err := h.Value(ctx, key)
	if err != nil {
		return nil // not cached: read again next time
	}
	if found && raw != "" {
		_ = json.Unmarshal([]byte(raw), &v) // garbage reads as no buttons
	}
	b.put(key, v)
	return v
}

func (b *buttonStore) put(key string, v []buttonView) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cache == nil || len(b.cache) >= maxCached {
		b.cache = map[string][]buttonView{}
	}
	b.cache[key] = v
}

// set persists a message's buttons (none: they are gone).
func (b *buttonStore) set(ctx context.Context, chat adapters.JID, id adapters.MessageID, buttons []adapters.Button) ([]buttonView, error) {
	h := b.running()
	if h == nil {
		return nil, fmt.Errorf("web: buttons in %s: the adapter is not running", chat)
	}
	var views []buttonView
	for _, bt := range buttons {
		if err := bt.Validate(); err != nil {
			return nil, err
		}
		views = append(views, buttonView{Label: bt.Label, Data: bt.Data, Style: string(bt.Style)})
	}
	raw, ttl := "[]", goneTTL
	if len(views) > 0 {
		j, err := json.Marshal(views)
		if err != nil {
			return nil, fmt.Errorf("web: encode buttons: %w", err)
		}
		raw, ttl = string(j), 0
	}
	key := buttonsKey(chat, id)
	if err := h.SetValue(ctx, key, raw, ttl); err != nil {
		return nil, fmt.Errorf("web: persist buttons of %s in %s: %w", id, chat, err)
	}
	b.put(key, views)
	return views, nil
}

// SendButtons posts m with buttons under it: the buttons are persisted,
// and the message is handed to the gateway as the bot's own (stored once
// by (chat, id), whoever stores it first), so the pages show it.
func (a *Adapter) SendButtons(ctx context.Context, m adapters.Outbound, buttons []adapters.Button) (adapters.MessageID, error) {
	if _, err := roomOf(m.Chat); err != nil {
		return "", fmt.Errorf("web: send %s: %w: %w", m.Chat, err, adapters.ErrPermanent)
	}
	id := adapters.MessageID(buttonsPrefix + randomID())
	if _, err := a.buttons.set(ctx, m.Chat, id, buttons); err != nil {
		return "", err
	}
	if err := a.echo(ctx, adapters.Inbound{Kind: adapters.KindMessage, Chat: m.Chat, ID: id, Text: m.Text, Topic: m.Topic, ReplyTo: m.ReplyTo}); err != nil {
		return "", err
	}
	return id, nil
}

// EditButtons replaces a message's text and buttons: persisted, stored as
// the bot's edit, and shown at once on the open pages (an "edit" event).
func (a *Adapter) EditButtons(ctx context.Context, ref adapters.MessageRef, text string, buttons []adapters.Button) error {
	if _, err := roomOf(ref.Chat); err != nil {
		return fmt.Errorf("web: edit %s: %w: %w", ref.Chat, err, adapters.ErrPermanent)
	}
	if !strings.HasPrefix(ref.ID.String(), buttonsPrefix) {
		return fmt.Errorf("web: edit %s in %s: not a message sent with buttons: %w", ref.ID, ref.Chat, adapters.ErrPermanent)
	}
	views, err := a.buttons.set(ctx, ref.Chat, ref.ID, buttons)
	if err != nil {
		return err
	}
	if err := a.echo(ctx, adapters.Inbound{Kind: adapters.KindEdit, Chat: ref.Chat, ID: ref.ID, Text: text, Topic: ref.Topic}); err != nil {
		return err
	}
	a.hub.edit(ref.Chat, draftView{Type: "edit", Turn: "edit:" + ref.ID.String(), ID: ref.ID, Text: text, Buttons: views})
	return nil
}

// echo hands the gateway one of the bot's own messages (or edits).
func (a *Adapter) echo(ctx context.Context, in adapters.Inbound) error {
	h := a.buttons.running()
	if h == nil {
		return fmt.Errorf("web: %s: the adapter is not running", in.Chat)
	}
	in.Sender, in.SenderName, in.FromBot, in.Time = senderJID(botSender), a.botName, true, time.Now().UTC()
	if _, err := h.Deliver(ctx, in); err != nil {
		return fmt.Errorf("web: store the bot's message %s in %s: %w", in.ID, in.Chat, err)
	}
	return nil
}

// pressRequest is the body of POST /api/rooms/{room}/press.
type pressRequest struct {
	Data    string `json:"data"`
	Sender  string `json:"sender"`
	Name    string `json:"name"`
	Message string `json:"message"` // the message carrying the button
	Topic   string `json:"topic"`
}

// approvalRequest is the body of POST /api/approvals/{id}.
type approvalRequest struct {
	Decision string `json:"decision"`
	Sender   string `json:"sender"`
	Name     string `json:"name"`
	Room     string `json:"room"`
	Message  string `json:"message"`
}

// pressResponse answers a press: the text for the presser alone.
type pressResponse struct {
	Answer string `json:"answer"`
}

// postPress serves POST /api/rooms/{room}/press: any button of the bot's.
func (a *Adapter) postPress(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	if err := checkRoom(room); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var req pressRequest
	if status, err := decodeJSON(w, r, &req, "data, sender, name, message, topic"); err != nil {
		writeError(w, status, err.Error())
		return
	}
	switch {
	case req.Data == "":
		writeError(w, http.StatusBadRequest, `field "data" is required: the pressed button's data`)
		return
	case len(req.Data) > adapters.MaxButtonData:
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`field "data" is longer than %d bytes`, adapters.MaxButtonData))
		return
	}
	a.press(w, r, room, req.Data, req.Sender, req.Name, req.Message, req.Topic)
}

// postApproval serves POST /api/approvals/{id}: a decision on an approval
// request, the press of its button "appr:<id>:<decision>".
func (a *Adapter) postApproval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := checkWord("approval id", id); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var req approvalRequest
	if status, err := decodeJSON(w, r, &req, "decision, sender, name, room, message"); err != nil {
		writeError(w, status, err.Error())
		return
	}
	switch req.Decision {
	case "allow", "session", "deny":
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`field "decision" must be "allow", "session" or "deny", not %q`, req.Decision))
		return
	}
	if req.Room != "" {
		if err := checkRoom(req.Room); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	a.press(w, r, req.Room, "appr:"+id+":"+req.Decision, req.Sender, req.Name, req.Message, "")
}

// press hands a press by sender to the gateway and answers its text: 200,
// 400 for a press the gateway refused as garbage, 404 (the text as the
// error) for one naming a request that does not exist, 503 when it failed.
func (a *Adapter) press(w http.ResponseWriter, r *http.Request, room, data, sender, name, message, topic string) {
	if name = strings.TrimSpace(name); name != "" && checkName(name, a.botName) != nil {
		name = "" // one a post would refuse: the press is named by its sender
	}
	name, err := checkSender(sender, name, a.botName)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p := adapters.Press{Sender: senderJID(sender), SenderName: name, Data: data, Message: adapters.MessageID(message), Topic: topic}
	if room != "" {
		p.Chat = chatJID(room)
	}
	h := a.buttons.running()
	if h == nil {
		writeError(w, http.StatusServiceUnavailable, adapters.PressFailedAnswer)
		return
	}
	answer, err := h.Press(r.Context(), p)
	switch {
	case errors.Is(err, adapters.ErrBadMessage):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, adapters.ErrUnknownRequest):
		writeError(w, http.StatusNotFound, answer)
	case err != nil:
		a.log.Warn("web button press not taken; the presser was asked to try again", "jid", p.Chat, "sender", p.Sender, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, pressResponse{Answer: adapters.PressFailedAnswer})
	default:
		writeJSON(w, http.StatusOK, pressResponse{Answer: answer})
	}
}
