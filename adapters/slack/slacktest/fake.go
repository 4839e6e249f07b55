// Package slacktest is a fake Slack for tests: an httptest server with the
// Web API methods the Slack adapter calls (/api/<method>), a Socket Mode
// websocket that sends events_api envelopes and records acknowledgements,
// signed Events API requests, file uploads and downloads, streamed messages
// (chat.startStream, appendStream, stopStream), and a record of what each
// channel showed of the bot (Shown). Conversations and messages live in
// memory. It is imported by tests only.
package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"testing"
)

// Fixed identities of the fake workspace.
const (
	Team     = "T1"
	BotUser  = "UBOT"
	BotID    = "BBOT"
	BotToken = "xoxb-fake"
	AppToken = "xapp-fake"
	Secret   = "signing-secret"
)

// Msg is a message the fake holds.
type Msg struct {
	TS, User, BotID, Text, ThreadTS, Subtype string
	Files                                    []File
	Reactions                                []string
	Pinned, Deleted                          bool
	// Markdown: Text is standard Markdown (a streamed message's
	// markdown_text), not mrkdwn. Streaming: chat.stopStream has not
	// ended its stream yet.
	Markdown, Streaming bool
	Buttons             []Button // under it (Block Kit actions)
}

// File is an uploaded or attached file.
type File struct {
	ID, Name, MIME string
	Data           []byte
	URL            string // where files.info says it downloads from; "": the fake's /files/<id>
	// Redirect, when set, makes the fake's /files/<id> (given the token)
	// answer 302 to it instead of the data.
	Redirect string
}

// Channel is a conversation.
type Channel struct {
	ID, Name string
	Type     string // channel, group, im, mpim
	User     string // im: the other user
	Error    string // every write answers this error (not_in_channel, is_archived...)
	Messages []*Msg
}

// Envelope is a Socket Mode envelope the fake sent.
type Envelope struct {
	ID    string
	Type  string // events_api (""), interactive
	Body  []byte
	Acked bool
	Acks  int // acknowledgements received (a replayed envelope is acknowledged again)
}

// Server is the fake.
type Server struct {
	srv *httptest.Server
	// EventsURL, when set, makes Emit POST signed Events API requests
	// there instead of using the Socket Mode websocket.
	EventsURL string
	// InteractivityURL, when set, makes UserPresses POST signed
	// interactivity requests there instead of using Socket Mode.
	InteractivityURL string

	mu        sync.Mutex
	changed   chan struct{}
	channels  map[string]*Channel
	users     map[string]string
	files     map[string]*File
	calls     []Call
	next      int64
	base      int64
	rateLimit time.Duration
	// limitedAt and retriedAt: the last 429 answered, and the first write after it.
	limitedAt, retriedAt time.Time
	fileLimit            int // the next file download answers 429 with this Retry-After
	rejectFmt            bool
	outages              map[string]int
	badBot               bool
	badApp               bool
	conn                 *websocket.Conn
	conns                int
	envelopes            []*Envelope
	shown                []shownIn
	refuse               string // chat.startStream answers this error ("": streams work)
	infoErr              string // conversations.info answers this error ("": it answers; NoConversationInfo, FailConversationInfo)
	ephemeral            []Ephemeral
	HTTP                 *http.Client
}

// Call is one Web API call.
type Call struct {
	Method string
	Form   url.Values
}

// New starts a fake Slack for the test, with channels C1 (#general), G1 (a
// private channel), D1 (a DM with U1) and users U1 (alice), U2 (bob), UBOT
// (switchboard). It closes when the test ends.
func New(t testing.TB) *Server {
	s := &Server{changed: make(chan struct{}), base: time.Now().Unix(), HTTP: &http.Client{Timeout: 30 * time.Second},
		channels: map[string]*Channel{
			"C1": {ID: "C1", Name: "general", Type: "channel"},
			"G1": {ID: "G1", Name: "secret", Type: "group"},
			"D1": {ID: "D1", Type: "im", User: "U1"},
		},
		users: map[string]string{"U1": "alice", "U2": "bob", BotUser: "switchboard"},
		files: map[string]*File{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/{method}", s.api)
	mux.HandleFunc("/ws", s.ws)
	mux.HandleFunc("/upload/{id}", s.upload)
	mux.HandleFunc("/files/{id}", s.download)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.mu.Lock()
		if s.conn != nil {
			_ = s.conn.Close()
		}
		s.mu.Unlock()
		s.srv.Close()
	})
	return s
}

// URL is the Web API base to give the adapter as api_url.
func (s *Server) URL() string { return s.srv.URL + "/api/" }

func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor waits until cond holds (checked after every change of the
// fake); cond may call the fake's methods. After 10 s it fails t.
func (s *Server) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !s.wait(10*time.Second, cond) {
		t.Fatalf("fake slack: timed out waiting for %s", what)
	}
}

// wait blocks until cond holds (checked after every change) or timeout,
// and reports whether it held.
func (s *Server) wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return cond()
		}
	}
}

// newTS mints a unique, increasing timestamp.
func (s *Server) newTS() string {
	s.next++
	return fmt.Sprintf("%d.%06d", s.base, s.next)
}

// SetBadTokens makes auth.test (bot) or apps.connections.open (app) refuse.
func (s *Server) SetBadTokens(bot, app bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.badBot, s.badApp = bot, app
}

// SetChannelError makes every write to channel answer code.
func (s *Server) SetChannelError(channel, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[channel].Error = code
}

// SetUserName sets the name users.info gives user (its display and real
// name; the bot's handle in auth.test stays "switchboard").
func (s *Server) SetUserName(user, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[user] = name
}

// RateLimit makes the next write answer 429 with Retry-After.
func (s *Server) RateLimit(wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimit = wait
}

// RateLimitFiles makes the next file download answer 429 with a
// Retry-After of wait, in whole seconds.
func (s *Server) RateLimitFiles(wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fileLimit = int(wait / time.Second)
}

// Outage makes the next n calls of method answer 503.
func (s *Server) Outage(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outages == nil {
		s.outages = map[string]int{}
	}
	s.outages[method] = n
}

// NoConversationInfo makes conversations.info answer unknown_method, as
// a proxy or a test server that serves only the calls of sending would.
func (s *Server) NoConversationInfo() { s.FailConversationInfo("unknown_method") }

// FailConversationInfo makes conversations.info answer the error code
// (internal_error: Slack's failure of the moment; "": it answers again).
func (s *Server) FailConversationInfo(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.infoErr = code
}

// RejectFormatting makes the next chat.postMessage or chat.update with
// markup (mrkdwn not false) fail with invalid_blocks.
func (s *Server) RejectFormatting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectFmt = true
}

// Calls returns the Web API calls of method so far.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Messages returns a copy of a channel's messages.
func (s *Server) Messages(channel string) []Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Msg
	for _, m := range s.channels[channel].Messages {
		c := *m
		c.Reactions = append([]string(nil), m.Reactions...)
		out = append(out, c)
	}
	return out
}

// AddMessage stores a user's message without emitting an event (what
// happened while the bot was away); it returns the ts.
func (s *Server) AddMessage(channel, user, text, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &Msg{TS: s.newTS(), User: user, Text: text, ThreadTS: threadTS}
	s.channels[channel].Messages = append(s.channels[channel].Messages, m)
	s.notify()
	return m.TS
}

// AddFile stores a file a user attached; it returns its id.
func (s *Server) AddFile(name, mime string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("F%d", len(s.files)+1)
	s.files[id] = &File{ID: id, Name: name, MIME: mime, Data: data}
	return id
}

func (s *Server) fileJSON(f *File) map[string]any {
	shares := map[string]any{}
	for _, c := range s.channels {
		for _, m := range c.Messages {
			for _, mf := range m.Files {
				if mf.ID == f.ID {
					shares[c.ID] = []map[string]any{{"ts": m.TS, "thread_ts": m.ThreadTS}}
				}
			}
		}
	}
	u := f.URL
	if u == "" {
		u = s.srv.URL + "/files/" + f.ID
	}
	return map[string]any{"shares": map[string]any{"public": shares}, "id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.MIME, "size": len(f.Data),
		"url_private_download": u, "url_private": u}
}

func (s *Server) msgJSON(c *Channel, m *Msg) map[string]any {
	j := map[string]any{"type": "message", "ts": m.TS, "text": m.Text}
	if m.User != "" {
		j["user"] = m.User
	}
	if m.BotID != "" {
		j["bot_id"] = m.BotID
	}
	if m.Subtype != "" {
		j["subtype"] = m.Subtype
	}
	if m.ThreadTS != "" {
		j["thread_ts"] = m.ThreadTS
		for _, p := range c.Messages {
			if p.TS == m.ThreadTS && p.TS != m.TS {
				j["parent_user_id"] = p.User
			}
		}
	}
	var files []map[string]any
	for _, f := range m.Files {
		files = append(files, s.fileJSON(&f))
	}
	if files != nil {
		j["files"] = files
	}
	n, latest := 0, ""
	for _, r := range c.Messages {
		if r.ThreadTS == m.TS && r.TS != m.TS && !r.Deleted {
			n, latest = n+1, r.TS
		}
	}
	if n > 0 {
		j["thread_ts"], j["reply_count"], j["latest_reply"] = m.TS, n, latest
	}
	return j
}

// ---- Web API ----

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	_ = r.ParseMultipartForm(1 << 20)
	_ = r.ParseForm()
	token := r.Form.Get("token")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		token = strings.TrimPrefix(h, "Bearer ")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Method: method, Form: r.Form})
	s.notify()
	write := strings.HasPrefix(method, "chat.") || strings.HasPrefix(method, "reactions.") ||
		strings.HasPrefix(method, "pins.") || strings.HasPrefix(method, "files.getUpload") || strings.HasPrefix(method, "files.complete")
	if s.outages[method] > 0 {
		s.outages[method]--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if write && s.rateLimit > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(s.rateLimit.Seconds()))))
		s.rateLimit = 0
		s.limitedAt, s.retriedAt = time.Now(), time.Time{}
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if write && !s.limitedAt.IsZero() && s.retriedAt.IsZero() {
		s.retriedAt = time.Now()
	}
	res := s.method(method, token, r.Form)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

func fail(code string) map[string]any { return map[string]any{"ok": false, "error": code} }

func ok(kv ...any) map[string]any {
	m := map[string]any{"ok": true}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func (s *Server) method(method, token string, f url.Values) map[string]any {
	if method == "apps.connections.open" {
		if token != AppToken || s.badApp {
			return fail("invalid_auth")
		}
		return ok("url", "ws"+strings.TrimPrefix(s.srv.URL, "http")+"/ws")
	}
	if token != BotToken || s.badBot {
		return fail("invalid_auth")
	}
	switch method {
	case "auth.test":
		return ok("team_id", Team, "user_id", BotUser, "bot_id", BotID, "team", "fake", "user", "switchboard")
	case "users.info":
		name, found := s.users[f.Get("user")]
		if !found {
			return fail("user_not_found")
		}
		return ok("user", map[string]any{"id": f.Get("user"), "name": name, "real_name": name, "profile": map[string]any{"display_name": name}})
	case "conversations.info":
		if s.infoErr != "" {
			return fail(s.infoErr)
		}
		c, found := s.channels[f.Get("channel")]
		if !found {
			return fail("channel_not_found")
		}
		return ok("channel", map[string]any{"id": c.ID, "name": c.Name, "is_channel": c.Type == "channel", "is_group": c.Type == "group",
			"is_private": c.Type == "group" || c.Type == "mpim", "is_im": c.Type == "im", "is_mpim": c.Type == "mpim", "user": c.User})
	case "files.info":
		fl, found := s.files[f.Get("file")]
		if !found {
			return fail("file_not_found")
		}
		return ok("file", s.fileJSON(fl))
	case "files.getUploadURLExternal":
		id := fmt.Sprintf("F%d", len(s.files)+1)
		s.files[id] = &File{ID: id, Name: f.Get("filename")}
		return ok("upload_url", s.srv.URL+"/upload/"+id, "file_id", id)
	}
	c, found := s.channels[f.Get("channel")]
	if method == "files.completeUploadExternal" {
		c, found = s.channels[f.Get("channel_id")]
	}
	if !found {
		return fail("channel_not_found")
	}
	if c.Error != "" && !strings.HasPrefix(method, "conversations.") {
		return fail(c.Error)
	}
	return s.channelMethod(method, c, f)
}

func (s *Server) find(c *Channel, ts string) *Msg {
	for _, m := range c.Messages {
		if m.TS == ts {
			return m
		}
	}
	return nil
}

func (s *Server) channelMethod(method string, c *Channel, f url.Values) map[string]any {
	if (method == "chat.postMessage" || method == "chat.update") && s.rejectFmt && f.Get("mrkdwn") != "false" {
		s.rejectFmt = false
		return fail("invalid_blocks")
	}
	switch method {
	case "chat.postMessage":
		if strings.TrimSpace(f.Get("text")) == "" && f.Get("blocks") == "" && f.Get("attachments") == "" {
			return fail("no_text") // as Slack: a message must show something
		}
		m := &Msg{TS: s.newTS(), User: BotUser, BotID: BotID, Text: f.Get("text"), ThreadTS: f.Get("thread_ts")}
		if code := applyBlocks(m, f.Get("blocks")); code != "" {
			return fail(code)
		}
		c.Messages = append(c.Messages, m)
		s.show(c, m)
		return ok("channel", c.ID, "ts", m.TS)
	case "chat.update", "chat.delete":
		m := s.find(c, f.Get("ts"))
		if m == nil || m.Deleted {
			return fail("message_not_found")
		}
		if m.User != BotUser || m.Streaming && method == "chat.update" {
			return fail("cant_update_message")
		}
		if method == "chat.delete" {
			m.Deleted = true
		} else {
			// Text without blocks replaces a streamed message's
			// Markdown: the message renders its text (mrkdwn) again.
			m.Text, m.Markdown = f.Get("text"), false
			if code := applyBlocks(m, f.Get("blocks")); code != "" {
				return fail(code)
			}
			s.show(c, m)
		}
		return ok("channel", c.ID, "ts", m.TS, "text", m.Text)
	case "chat.startStream", "chat.appendStream", "chat.stopStream":
		return s.stream(method, c, f)
	case "chat.postEphemeral":
		return s.postEphemeral(c, f)
	case "reactions.add", "pins.add", "pins.remove":
		m := s.find(c, f.Get("timestamp"))
		if m == nil {
			return fail("message_not_found")
		}
		switch method {
		case "reactions.add":
			// Slack takes emoji names only ("+1", "thumbsup",
			// "+1::skin-tone-3"), never the emoji itself.
			if name := f.Get("name"); name == "" || strings.ContainsFunc(name, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("_+-':", r))
			}) {
				return fail("invalid_name")
			}
			m.Reactions = append(m.Reactions, f.Get("name"))
		case "pins.add":
			m.Pinned = true
		default:
			m.Pinned = false
		}
		return ok()
	case "files.completeUploadExternal":
		var fs []struct{ ID, Title string }
		_ = json.Unmarshal([]byte(f.Get("files")), &fs)
		m := &Msg{TS: s.newTS(), User: BotUser, BotID: BotID, Text: f.Get("initial_comment"), ThreadTS: f.Get("thread_ts"), Subtype: "file_share"}
		var out []map[string]any
		for _, x := range fs {
			if fl := s.files[x.ID]; fl != nil {
				m.Files = append(m.Files, *fl)
				out = append(out, map[string]any{"id": x.ID, "title": x.Title})
			}
		}
		c.Messages = append(c.Messages, m)
		return ok("files", out)
	case "conversations.history":
		return s.history(c, f, func(m *Msg) bool { return m.ThreadTS == "" || m.ThreadTS == m.TS })
	case "conversations.replies":
		parent := f.Get("ts")
		res := s.history(c, f, func(m *Msg) bool { return m.ThreadTS == parent && m.TS != parent })
		if p := s.find(c, parent); p != nil {
			msgs := res["messages"].([]map[string]any)
			sort.Slice(msgs, func(i, j int) bool { return msgs[i]["ts"].(string) < msgs[j]["ts"].(string) })
			res["messages"] = append([]map[string]any{s.msgJSON(c, p)}, msgs...)
		}
		return res
	}
	return fail("unknown_method")
}

// history lists matching messages in (oldest, latest), newest first, paged
// by an offset cursor.
func (s *Server) history(c *Channel, f url.Values, match func(*Msg) bool) map[string]any {
	oldest, latest := tsNum(f.Get("oldest")), tsNum(f.Get("latest"))
	var all []*Msg
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		t := tsNum(m.TS)
		if m.Deleted || !match(m) || oldest > 0 && t <= oldest || latest > 0 && t >= latest {
			continue
		}
		all = append(all, m)
	}
	off, _ := strconv.Atoi(f.Get("cursor"))
	limit, _ := strconv.Atoi(f.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	end := min(off+limit, len(all))
	out := []map[string]any{}
	for _, m := range all[min(off, end):end] {
		out = append(out, s.msgJSON(c, m))
	}
	res := ok("messages", out, "has_more", end < len(all))
	if end < len(all) {
		res["response_metadata"] = map[string]any{"next_cursor": strconv.Itoa(end)}
	}
	return res
}

func tsNum(ts string) float64 {
	v, _ := strconv.ParseFloat(ts, 64)
	return v
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	fh, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	data, _ := io.ReadAll(fh)
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[r.PathValue("id")]
	if f == nil {
		http.NotFound(w, r)
		return
	}
	f.Data = data
	_, _ = io.WriteString(w, "OK - "+strconv.Itoa(len(data)))
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		http.Error(w, "sign in", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	f := s.files[r.PathValue("id")]
	wait := s.fileLimit
	s.fileLimit = 0
	s.mu.Unlock()
	if wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		http.Error(w, "ratelimited", http.StatusTooManyRequests)
		return
	}
	if f == nil {
		http.NotFound(w, r)
		return
	}
	if f.Redirect != "" {
		http.Redirect(w, r, f.Redirect, http.StatusFound)
		return
	}
	_, _ = w.Write(f.Data)
}

// RateLimited reports when the fake last answered a write with a 429 (the
// wait RateLimit set) and when the next write came (zero: none yet).
func (s *Server) RateLimited() (at, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limitedAt, s.retriedAt
}
