package slacktest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
)

// ---- events ----

// Emit sends an inner event (a JSON object) to the bot, through the Events
// API when EventsURL is set, else through Socket Mode; it returns the
// event_id. Over Socket Mode it returns once the envelope was written (or
// queued while no connection is open).
func (s *Server) Emit(inner map[string]any) (eventID string, status int, err error) {
	s.mu.Lock()
	s.next++
	eventID = fmt.Sprintf("Ev%06d", s.next)
	s.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"token": "x", "team_id": Team, "api_app_id": "A1", "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(), "event": inner})
	if s.EventsURL != "" {
		// Slack retries a delivery that was not answered 200, three times.
		for try := 0; try <= 3; try++ {
			retry := ""
			if try > 0 {
				retry = strconv.Itoa(try)
				time.Sleep(20 * time.Millisecond) // the platform's retry delay, shortened
			}
			if status, err = s.Post(body, Secret, time.Now(), retry); err == nil && status == http.StatusOK {
				break
			}
		}
		return eventID, status, err
	}
	s.sendEnvelope(eventID, body)
	return eventID, 0, nil
}

// Post sends a signed Events API request (signed with secret at ts).
func (s *Server) Post(body []byte, secret string, ts time.Time, retryNum string) (int, error) {
	status, _, err := s.post(body, secret, ts, retryNum)
	return status, err
}

// PostBody sends a well-signed Events API request and returns the answer.
func (s *Server) PostBody(body []byte) (int, string, error) {
	return s.post(body, Secret, time.Now(), "")
}

func (s *Server) post(body []byte, secret string, ts time.Time, retryNum string) (int, string, error) {
	return s.signedPost(s.EventsURL, "application/json", body, secret, ts, retryNum)
}

// signedPost posts body to u signed as Slack signs its requests.
func (s *Server) signedPost(u, contentType string, body []byte, secret string, ts time.Time, retryNum string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", stamp, body)
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("Content-Type", contentType)
	if retryNum != "" {
		req.Header.Set("X-Slack-Retry-Num", retryNum)
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer), err
}

// Callback builds an event_callback body with a given event id.
func Callback(eventID string, inner map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"token": "x", "team_id": Team, "api_app_id": "A1", "type": "event_callback",
		"event_id": eventID, "event_time": time.Now().Unix(), "event": inner})
	return b
}

func (s *Server) sendEnvelope(id string, payload []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	env := &Envelope{ID: "env-" + id, Body: payload}
	s.envelopes = append(s.envelopes, env)
	s.writeEnvelope(env)
}

// writeEnvelope writes env on the live connection, if any (s.mu held).
func (s *Server) writeEnvelope(env *Envelope) {
	if s.conn == nil {
		return
	}
	typ := env.Type
	if typ == "" {
		typ = "events_api"
	}
	msg, _ := json.Marshal(map[string]any{"envelope_id": env.ID, "type": typ, "accepts_response_payload": typ == "interactive",
		"payload": json.RawMessage(env.Body)})
	_ = s.conn.WriteMessage(websocket.TextMessage, msg)
}

// Envelopes returns the Socket Mode envelopes sent so far.
func (s *Server) Envelopes() []Envelope {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Envelope
	for _, e := range s.envelopes {
		out = append(out, *e)
	}
	return out
}

// Redeliver sends every unacknowledged envelope again, as Slack does.
func (s *Server) Redeliver() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.envelopes {
		if !e.Acked {
			s.writeEnvelope(e)
		}
	}
}

// Replay sends every envelope again, acknowledged or not: Slack's retry
// when an acknowledgement came late.
func (s *Server) Replay() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.envelopes {
		s.writeEnvelope(e)
	}
}

// Connections counts Socket Mode connections opened so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// waitLive waits (up to 10s) for a live Socket Mode connection: a client
// can see its dial succeed before the handler here holds the connection.
func (s *Server) waitLive() {
	if s.EventsURL != "" {
		return // the Events API has no connection to drop
	}
	s.wait(10*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.conn != nil
	})
}

// Disconnect drops the live Socket Mode connection.
func (s *Server) Disconnect() {
	s.waitLive()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
}

// WarnDisconnect sends Slack's routine refresh notice.
func (s *Server) WarnDisconnect(reason string) {
	s.waitLive()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		_ = s.conn.WriteJSON(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "fake"}})
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) ws(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.conn = conn
	s.conns++
	_ = conn.WriteJSON(map[string]any{"type": "hello", "num_connections": 1, "connection_info": map[string]any{"app_id": "A1"}})
	_ = conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second))
	for _, e := range s.envelopes {
		if !e.Acked {
			s.writeEnvelope(e) // Slack retries what was not acknowledged
		}
	}
	s.notify()
	s.mu.Unlock()
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.mu.Lock()
				_ = conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second))
				s.mu.Unlock()
			}
		}
	}()
	for {
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := conn.ReadJSON(&ack); err != nil {
			s.mu.Lock()
			if s.conn == conn {
				s.conn = nil
			}
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		for _, e := range s.envelopes {
			if e.ID == ack.EnvelopeID {
				e.Acked = true
				e.Acks++
			}
		}
		s.notify()
		s.mu.Unlock()
	}
}

// Post is a user's message as UserPost makes it.
type Post struct {
	Channel, User, Text, ThreadTS string
	Mention                       bool // also send app_mention (the text should hold <@UBOT>)
	File                          *File
	Files                         []File // more files, after File
	Bot                           bool   // posted by another bot (bot_id B2, subtype bot_message)
}

// UserPosts stores a user's message and emits its message event (and the
// app_mention event when p.Mention); it returns the ts, and an error when
// the bot did not take the event (Events API).
func (s *Server) UserPosts(p Post) (string, error) {
	s.mu.Lock()
	c := s.channels[p.Channel]
	m := &Msg{TS: s.newTS(), User: p.User, Text: p.Text, ThreadTS: p.ThreadTS}
	if p.Bot {
		m.User, m.BotID, m.Subtype = "", "B2", "bot_message"
	}
	files := p.Files
	if p.File != nil {
		files = append([]File{*p.File}, files...)
	}
	for _, f := range files {
		f.ID = fmt.Sprintf("F%d", len(s.files)+1)
		s.files[f.ID] = &f
		m.Files = append(m.Files, f)
		m.Subtype = "file_share"
	}
	c.Messages = append(c.Messages, m)
	ev := s.msgJSON(c, m)
	s.notify()
	s.mu.Unlock()
	ev["channel"], ev["channel_type"], ev["event_ts"] = c.ID, c.Type, m.TS
	if _, status, err := s.Emit(ev); err != nil || status >= 300 {
		return m.TS, fmt.Errorf("emit message: status %d: %v", status, err)
	}
	if p.Mention {
		am := map[string]any{"type": "app_mention", "user": p.User, "text": p.Text, "ts": m.TS, "channel": c.ID, "event_ts": m.TS}
		if p.ThreadTS != "" {
			am["thread_ts"] = p.ThreadTS
		}
		if _, status, err := s.Emit(am); err != nil || status >= 300 {
			return m.TS, fmt.Errorf("emit app_mention: status %d: %v", status, err)
		}
	}
	return m.TS, nil
}

// ChannelType is a channel's event channel_type.
func (s *Server) ChannelType(channel string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.channels[channel].Type
}

// UserEdits edits a user's message and emits message_changed.
func (s *Server) UserEdits(channel, ts, text string) error {
	s.mu.Lock()
	c := s.channels[channel]
	m := s.find(c, ts)
	prev := s.msgJSON(c, m)
	m.Text = text
	cur := s.msgJSON(c, m)
	s.notify()
	s.mu.Unlock()
	cur["edited"] = map[string]any{"user": m.User, "ts": s.tsNow()}
	_, status, err := s.Emit(map[string]any{"type": "message", "subtype": "message_changed", "channel": channel,
		"channel_type": c.Type, "hidden": true, "message": cur, "previous_message": prev, "event_ts": s.tsNow(), "ts": s.tsNow()})
	return emitErr(status, err)
}

// UserDeletes deletes a message and emits message_deleted.
func (s *Server) UserDeletes(channel, ts string) error {
	s.mu.Lock()
	c := s.channels[channel]
	m := s.find(c, ts)
	m.Deleted = true
	prev := s.msgJSON(c, m)
	s.notify()
	s.mu.Unlock()
	_, status, err := s.Emit(map[string]any{"type": "message", "subtype": "message_deleted", "channel": channel,
		"channel_type": c.Type, "hidden": true, "deleted_ts": ts, "previous_message": prev, "event_ts": s.tsNow(), "ts": s.tsNow()})
	return emitErr(status, err)
}

// UserReacts emits reaction_added by user on a message.
func (s *Server) UserReacts(channel, ts, user, emoji string) error {
	_, status, err := s.Emit(map[string]any{"type": "reaction_added", "user": user, "reaction": emoji, "item_user": "U1",
		"item": map[string]any{"type": "message", "channel": channel, "ts": ts}, "event_ts": s.tsNow()})
	return emitErr(status, err)
}

func (s *Server) tsNow() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newTS()
}

func emitErr(status int, err error) error {
	if err != nil || status >= 300 {
		return fmt.Errorf("emit: status %d: %v", status, err)
	}
	return nil
}
