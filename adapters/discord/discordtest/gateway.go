package discordtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  int             `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// gateway serves one websocket connection of the bot.
func (f *Server) gateway(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	refuse := f.refuseWS
	f.mu.Unlock()
	if refuse {
		http.Error(w, "gateway unavailable", http.StatusServiceUnavailable)
		return
	}
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	send := func(v any) error {
		f.wmu.Lock()
		defer f.wmu.Unlock()
		return c.WriteJSON(v)
	}
	if err := send(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 45000}}); err != nil {
		return
	}
	for {
		var in frame
		if err := c.ReadJSON(&in); err != nil {
			f.mu.Lock()
			if f.conn == c {
				f.conn = nil
			}
			f.notify()
			f.mu.Unlock()
			return
		}
		switch in.Op {
		case 1:
			f.mu.Lock()
			if f.conn == c {
				f.beats++
				f.notify()
			}
			f.mu.Unlock()
			send(map[string]any{"op": 11})
		case 2:
			var id struct {
				Token   string `json:"token"`
				Intents int    `json:"intents"`
			}
			json.Unmarshal(in.D, &id)
			if id.Token != "Bot "+Token {
				c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."), time.Now().Add(time.Second))
				c.Close()
				return
			}
			f.mu.Lock()
			noContent := f.noContent
			f.mu.Unlock()
			if noContent && id.Intents&intentMessageContent != 0 {
				// What Discord does when the application has not enabled a
				// privileged intent that the bot asks for.
				c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4014, "Disallowed intent(s)."), time.Now().Add(time.Second))
				c.Close()
				return
			}
			f.ready(c, send)
		case 6:
			f.mu.Lock()
			refuse := f.noResume
			f.noResume = false
			f.mu.Unlock()
			if refuse {
				send(map[string]any{"op": 9, "d": false})
				continue
			}
			f.mu.Lock()
			f.conn, f.beats = c, 0
			f.seq++
			missed := f.missed
			f.missed = nil
			err := send(map[string]any{"op": 0, "t": "RESUMED", "s": f.seq, "d": map[string]any{}})
			for _, ev := range missed {
				if err == nil {
					err = f.write(c, ev)
				}
			}
			f.notify()
			f.mu.Unlock()
		}
	}
}

// ready starts a new session: READY, then the guild.
func (f *Server) ready(c *websocket.Conn, send func(any) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats = 0
	f.sessions++
	f.session = "session-" + strconv.Itoa(f.sessions)
	f.missed = nil // a new session replays nothing
	f.conn = c
	ws := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/gateway"
	f.seq++
	send(map[string]any{"op": 0, "t": "READY", "s": f.seq, "d": map[string]any{"v": 10, "session_id": f.session,
		"user": f.botUser(), "resume_gateway_url": ws,
		"guilds": []any{map[string]any{"id": GuildID, "unavailable": true}}}})
	f.seq++
	send(map[string]any{"op": 0, "t": "GUILD_CREATE", "s": f.seq, "d": map[string]any{"id": GuildID, "name": "Acme",
		"roles":    []any{map[string]any{"id": BotRole, "name": "switchboard", "managed": true}, map[string]any{"id": OpsRole, "name": "ops"}},
		"members":  []any{map[string]any{"user": f.botUser(), "roles": []any{BotRole}}},
		"channels": []any{map[string]any{"id": Channel, "type": 0, "name": "general"}},
		"threads":  []any{map[string]any{"id": Thread, "type": 11, "parent_id": Channel, "guild_id": GuildID, "name": "incident"}}}})
	f.notify()
}

// dispatch sends an event to the bot, or keeps it for a RESUME while it is
// disconnected.
func (f *Server) dispatch(t string, d any) {
	f.seq++
	b, _ := json.Marshal(map[string]any{"op": 0, "t": t, "s": f.seq, "d": d})
	if f.conn == nil || f.write(f.conn, b) != nil {
		f.missed = append(f.missed, b)
	}
	f.notify()
}

// Post is a user's message.
type Post struct {
	Channel     string
	Content     string
	MentionBot  bool
	MentionRole bool
	MentionBob  bool // mention another member (OtherID, "bob") ahead of the content
	MentionOps  bool // mention the guild's role "ops" (OpsRole) ahead of the content
	ReplyTo     string
	Author      string // default UserID
	Bot         bool   // the author is another bot
	File        string // an attachment's name
	FileData    []byte
	FileURL     string    // the attachment's URL; default this fake's CDN
	Time        time.Time // default now
}

// UserPosts stores a user's message and dispatches MESSAGE_CREATE; it
// returns the message id.
func (f *Server) UserPosts(p Post) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.Author == "" {
		p.Author = UserID
	}
	if p.Time.IsZero() {
		p.Time = time.Now()
	}
	f.nextID++
	m := &Msg{ID: strconv.Itoa(f.nextID), Channel: p.Channel, AuthorID: p.Author, Content: p.Content, ReplyTo: p.ReplyTo,
		File: p.File, FileData: p.FileData, FileURL: p.FileURL, Time: p.Time}
	if p.MentionBot {
		m.Content = "<@" + BotID + "> " + m.Content
	}
	if p.MentionRole {
		m.Content = "<@&" + BotRole + "> " + m.Content
	}
	if p.MentionBob {
		m.Content = "<@" + OtherID + "> " + m.Content
	}
	if p.MentionOps {
		m.Content = "<@&" + OpsRole + "> " + m.Content
	}
	if p.File != "" {
		f.files["a"+m.ID] = p.FileData
	}
	f.msgs = append(f.msgs, m)
	o := f.msgObj(m)
	if p.Bot {
		o["author"].(map[string]any)["bot"] = true
	}
	var mentions []any
	if p.MentionBot {
		mentions = append(mentions, f.botUser())
	}
	if p.MentionBob {
		mentions = append(mentions, map[string]any{"id": OtherID, "username": "bob"})
	}
	if mentions != nil {
		o["mentions"] = mentions
	}
	var roles []any
	if p.MentionRole {
		roles = append(roles, BotRole)
	}
	if p.MentionOps {
		roles = append(roles, OpsRole)
	}
	if roles != nil {
		o["mention_roles"] = roles
	}
	if p.ReplyTo != "" {
		if r := f.find(p.Channel, p.ReplyTo); r != nil {
			o["referenced_message"] = f.msgObj(r)
		}
	}
	f.dispatch("MESSAGE_CREATE", o)
	return m.ID
}

// UserEdits changes a user's message and dispatches MESSAGE_UPDATE.
func (f *Server) UserEdits(ch, id, content string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.find(ch, id)
	if m == nil {
		return
	}
	m.Content = content
	o := f.msgObj(m)
	o["edited_timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	f.dispatch("MESSAGE_UPDATE", o)
}

// UserDeletes deletes a message and dispatches MESSAGE_DELETE.
func (f *Server) UserDeletes(ch, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.find(ch, id); m != nil {
		m.Deleted = true
	}
	d := map[string]any{"id": id, "channel_id": ch}
	if ch != DMChan {
		d["guild_id"] = GuildID
	}
	f.dispatch("MESSAGE_DELETE", d)
}

// UserReacts dispatches MESSAGE_REACTION_ADD.
func (f *Server) UserReacts(ch, id, emoji string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := map[string]any{"user_id": UserID, "message_id": id, "channel_id": ch, "emoji": map[string]any{"name": emoji}}
	if ch != DMChan {
		d["guild_id"] = GuildID
		d["member"] = map[string]any{"nick": "Ann", "user": map[string]any{"id": UserID, "username": "ann"}}
	}
	f.dispatch("MESSAGE_REACTION_ADD", d)
}

// Disconnect drops the bot's websocket; it reconnects and resumes, and the
// events raised meanwhile are replayed. With resumable false the RESUME is
// refused: the bot starts a new session and must backfill what it missed.
//
// It waits for the connection's first heartbeat: discordgo sends one as soon
// as it connects, and a drop that races it makes discordgo close its new
// session after reconnecting (a discordgo bug this fake steps around).
func (f *Server) Disconnect(resumable bool) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		if f.beats > 0 || time.Now().After(deadline) {
			break
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		}
	}
	defer f.mu.Unlock()
	f.noResume = !resumable
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
	f.notify()
}

// RateLimit makes the next write answer 429 asking to wait (a per-route
// limit).
func (f *Server) RateLimit(wait time.Duration) { f.rateLimitNext(wait, false) }

// RateLimitGlobal makes the next write answer 429 asking to wait, as
// Discord's global limit does.
func (f *Server) RateLimitGlobal(wait time.Duration) { f.rateLimitNext(wait, true) }

func (f *Server) rateLimitNext(wait time.Duration, global bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rateLimit, f.global = wait.Seconds(), global
}

// Messages returns a copy of a channel's messages, oldest first.
func (f *Server) Messages(ch string) []Msg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Msg
	for _, m := range f.msgs {
		if m.Channel == ch {
			out = append(out, *m)
		}
	}
	return out
}

// Sessions is how many sessions (READYs) the bot started.
func (f *Server) Sessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions
}

// WaitFor waits until cond holds (checked after every change of the
// fake); cond may call the fake's methods. After 15 s it fails t.
func (f *Server) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("fake discord: timed out waiting for %s", what)
		}
	}
}

// Connected reports whether the bot's websocket is up.
func (f *Server) Connected() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conn != nil
}

// WaitBotMessage waits for a message of the bot in channel that match accepts.
func (f *Server) WaitBotMessage(t testing.TB, ch, what string, match func(Msg) bool) Msg {
	t.Helper()
	var found Msg
	f.WaitFor(t, what, func() bool {
		for _, m := range f.Messages(ch) {
			if m.AuthorID == BotID && match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// write sends one frame; every write to a connection goes through here.
func (f *Server) write(c *websocket.Conn, b []byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return c.WriteMessage(websocket.TextMessage, b)
}

// intentMessageContent is the privileged Message Content intent's bit.
const intentMessageContent = 1 << 15

// DisallowMessageContent makes the gateway act as for an application whose
// Message Content intent is off in the developer portal: an IDENTIFY asking
// for it is closed with 4014 "Disallowed intent(s).".
func (f *Server) DisallowMessageContent() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noContent = true
}

// RefuseConnections makes the gateway refuse new websocket connections
// (an outage), or accept them again.
func (f *Server) RefuseConnections(refuse bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseWS = refuse
}
