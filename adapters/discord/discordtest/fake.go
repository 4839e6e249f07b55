// Package discordtest is a fake Discord for tests: REST under /api/v9 and a
// gateway websocket speaking HELLO, IDENTIFY, READY, heartbeats, RESUME and
// INVALID_SESSION, dispatching message, reaction and thread events. It
// records what each channel showed of the bot (Shown: every post and every
// edit). The real discordgo talks to it through api_url.
package discordtest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The fake's fixed world.
const (
	Token    = "fake-discord-token"
	BotID    = "900"
	BotRole  = "700" // the bot's managed role
	OpsRole  = "701" // another role of the guild, "ops"
	UserID   = "7"
	OtherID  = "8" // another member, "bob"
	GuildID  = "100"
	Channel  = "200" // a text channel in the guild
	Thread   = "300" // a thread under Channel
	DMChan   = "400" // a DM channel with the user
	NoAccess = "666" // a channel the bot may not post in
	// OtherGuild is another server the bot is in, and OtherChannel a text
	// channel there (every other channel id is a text channel of GuildID).
	OtherGuild   = "101"
	OtherChannel = "500"
)

// Msg is a message the fake holds.
type Msg struct {
	ID          string
	Channel     string
	AuthorID    string
	Content     string
	ReplyTo     string
	Deleted     bool
	Pinned      bool
	Reactions   []string
	File        string
	FileData    []byte
	FileURL     string
	AllowedJSON string // the allowed_mentions the bot sent
	Time        time.Time
	Buttons     []Button // its components
	Nonce       string   // the nonce it was sent with, if any
}

// Server is the fake Discord.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	wmu       sync.Mutex // serializes writes to the websocket
	changed   chan struct{}
	msgs      []*Msg
	nextID    int
	conn      *websocket.Conn
	seq       int
	session   string
	sessions  int      // READYs sent
	beats     int      // heartbeats received on the current connection
	refuseWS  bool     // the gateway refuses websocket connections
	missed    [][]byte // events raised while no connection was up
	rateLimit float64  // seconds: the next write answers 429
	// limitedAt and retriedAt: the last 429 answered, and the first write after it.
	limitedAt, retriedAt time.Time
	global               bool
	noResume             bool // the next RESUME is refused (INVALID_SESSION)
	noContent            bool // an IDENTIFY with the Message Content intent is closed with 4014
	calls                []string
	files                map[string][]byte // attachment id -> content
	cdnLimit             int               // the next CDN download answers 429 with this Retry-After
	cdnMoved             map[string]string // attachment id -> where its download redirects
	shown                []Shown

	interactions map[string]*interaction

	botName atomic.Pointer[string] // the bot's username (SetBotName); nil: "switchboard"

	noLookups atomic.Bool // GET /channels/{id} answers 404 (NoChannelLookups)

	loseAnswers int // the next posts create their message but answer 502 (LoseAnswers)
}

// LoseAnswers makes the next n message posts create their message and
// answer 502 Bad Gateway, as Discord's edge does when the answer is lost
// on the way back: the sender cannot tell the message was created.
func (f *Server) LoseAnswers(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseAnswers = n
}

// NoChannelLookups makes the server answer GET /channels/{id} with a 404
// of no known route, as a proxy or a test server that serves only the
// calls of sending and reading messages would.
func (f *Server) NoChannelLookups() { f.noLookups.Store(true) }

// SetBotName gives the bot another username, as Discord shows it
// (bots' usernames may hold spaces: "My Bot"). Set it before the adapter
// connects.
func (f *Server) SetBotName(name string) { f.botName.Store(&name) }

// botUser is the bot's user object.
func (f *Server) botUser() map[string]any {
	name := "switchboard"
	if p := f.botName.Load(); p != nil {
		name = *p
	}
	return map[string]any{"id": BotID, "username": name, "bot": true}
}

// Shown is what a channel showed of the bot at one moment: a message as it
// was posted, and again as each edit left it.
type Shown struct {
	Channel, ID, Content string
	AllowedJSON          string // the allowed_mentions of that post or edit
}

// Shown returns what the channels showed of the bot so far, oldest first.
func (f *Server) Shown(channels ...string) []Shown {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Shown
	for _, s := range f.shown {
		if slices.Contains(channels, s.Channel) {
			out = append(out, s)
		}
	}
	return out
}

// New starts a fake Discord for the test.
func New(t testing.TB) *Server {
	f := &Server{t: t, changed: make(chan struct{}), nextID: 1000, files: map[string][]byte{}, interactions: map[string]*interaction{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.mu.Lock()
		if f.conn != nil {
			f.conn.Close()
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

// URL is the base to give the adapter as api_url.
func (f *Server) URL() string { return f.srv.URL }

func (f *Server) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/gateway" || r.URL.Path == "/gateway/":
		f.gateway(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/cdn/"):
		f.mu.Lock()
		data, ok := f.files[strings.TrimPrefix(r.URL.Path, "/cdn/")]
		wait := f.cdnLimit
		f.cdnLimit = 0
		moved := f.cdnMoved[strings.TrimPrefix(r.URL.Path, "/cdn/")]
		f.mu.Unlock()
		if moved != "" {
			http.Redirect(w, r, moved, http.StatusFound)
			return
		}
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": wait, "global": false})
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
		return
	}
	if r.Header.Get("Authorization") != "Bot "+Token {
		writeJSON(w, 401, map[string]any{"message": "401: Unauthorized", "code": 0})
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	if p := strings.Split(strings.Trim(path, "/"), "/"); len(p) == 4 && p[0] == "interactions" && p[3] == "callback" && r.Method == http.MethodPost {
		f.interactionCallback(w, r, p[1], p[2]) // authenticated by its token alone
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+path)
	f.mu.Unlock()
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/users/@me":
		writeJSON(w, 200, f.botUser())
	case path == "/gateway":
		writeJSON(w, 200, map[string]any{"url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/gateway"})
	case len(parts) == 2 && parts[0] == "channels" && r.Method == http.MethodGet && f.noLookups.Load():
		writeJSON(w, 404, map[string]any{"message": "404: Not Found", "code": 0})
	case len(parts) == 2 && parts[0] == "channels" && r.Method == http.MethodGet:
		writeJSON(w, 200, f.channelObj(parts[1]))
	case len(parts) >= 3 && parts[0] == "channels":
		f.channelCall(w, r, parts[1], parts[2:])
	case len(parts) == 3 && parts[0] == "guilds" && parts[2] == "emojis":
		writeJSON(w, 200, []map[string]any{{"id": "55", "name": "shipit"}})
	default:
		writeJSON(w, 404, map[string]any{"message": "404: Not Found", "code": 0})
	}
}

func (f *Server) channelObj(id string) map[string]any {
	switch id {
	case Thread:
		return map[string]any{"id": Thread, "type": 11, "guild_id": GuildID, "parent_id": Channel, "name": "incident"}
	case DMChan:
		return map[string]any{"id": DMChan, "type": 1}
	case OtherChannel:
		return map[string]any{"id": OtherChannel, "type": 0, "guild_id": OtherGuild, "name": "elsewhere"}
	}
	return map[string]any{"id": id, "type": 0, "guild_id": GuildID, "name": "general"}
}

func (f *Server) channelCall(w http.ResponseWriter, r *http.Request, ch string, rest []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	write := r.Method != http.MethodGet
	if write && f.rateLimit > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(f.rateLimit))
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset-After", fmt.Sprint(f.rateLimit))
		w.Header().Set("X-RateLimit-Bucket", "fake-bucket")
		if f.global {
			w.Header().Set("X-RateLimit-Global", "true")
		}
		writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": f.rateLimit, "global": f.global})
		f.rateLimit, f.global = 0, false
		f.limitedAt, f.retriedAt = time.Now(), time.Time{}
		return
	}
	if write && !f.limitedAt.IsZero() && f.retriedAt.IsZero() {
		f.retriedAt = time.Now()
	}
	if ch == NoAccess && write {
		writeJSON(w, 403, map[string]any{"message": "Missing Access", "code": 50001})
		return
	}
	switch {
	case rest[0] == "messages" && len(rest) == 1 && r.Method == http.MethodPost:
		f.postMessage(w, r, ch)
	case rest[0] == "messages" && len(rest) == 1 && r.Method == http.MethodGet:
		f.history(w, r, ch)
	case rest[0] == "messages" && len(rest) == 2:
		m := f.find(ch, rest[1])
		if m == nil {
			writeJSON(w, 404, map[string]any{"message": "Unknown Message", "code": 10008})
			return
		}
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, 200, f.msgObj(m))
		case http.MethodPatch:
			var body struct {
				Content         *string         `json:"content"`
				AllowedMentions json.RawMessage `json:"allowed_mentions"`
				Components      json.RawMessage `json:"components"`
			}
			json.NewDecoder(r.Body).Decode(&body)
			buttons, ok := components(body.Components)
			if !ok {
				writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
				return
			}
			if body.Components != nil {
				m.Buttons = buttons
			}
			if body.Content != nil {
				if len([]rune(*body.Content)) > 2000 {
					writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
					return
				}
				m.Content, m.AllowedJSON = *body.Content, string(body.AllowedMentions)
				if m.AuthorID == BotID {
					f.shown = append(f.shown, Shown{Channel: ch, ID: m.ID, Content: m.Content, AllowedJSON: m.AllowedJSON})
				}
			}
			writeJSON(w, 200, f.msgObj(m))
		case http.MethodDelete:
			m.Deleted = true
			w.WriteHeader(204)
		}
	case rest[0] == "messages" && len(rest) == 5 && rest[2] == "reactions" && r.Method == http.MethodPut:
		// As Discord: a unicode emoji or a custom one's name:id; a
		// shortcode such as "thumbsup" or "+1" is no emoji.
		if e := rest[3]; !strings.Contains(e, ":") && !strings.ContainsFunc(e, func(r rune) bool { return r > 0x7f }) {
			writeJSON(w, 400, map[string]any{"message": "Unknown Emoji", "code": 10014})
			return
		}
		if m := f.find(ch, rest[1]); m != nil {
			m.Reactions = append(m.Reactions, rest[3])
		}
		w.WriteHeader(204)
	case rest[0] == "pins" && len(rest) == 2:
		if m := f.find(ch, rest[1]); m != nil {
			m.Pinned = r.Method == http.MethodPut
		}
		w.WriteHeader(204)
	case rest[0] == "typing":
		w.WriteHeader(204)
	default:
		writeJSON(w, 404, map[string]any{"message": "404: Not Found", "code": 0})
	}
}

// postMessage creates the bot's message from a JSON or multipart body.
func (f *Server) postMessage(w http.ResponseWriter, r *http.Request, ch string) {
	var body struct {
		Content         string          `json:"content"`
		AllowedMentions json.RawMessage `json:"allowed_mentions"`
		Reference       *struct {
			MessageID string `json:"message_id"`
		} `json:"message_reference"`
		Components   json.RawMessage `json:"components"`
		Nonce        json.RawMessage `json:"nonce"`
		EnforceNonce bool            `json:"enforce_nonce"`
	}
	m := &Msg{Channel: ch, AuthorID: BotID, Time: time.Now()}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			data, _ := io.ReadAll(p)
			if p.FormName() == "payload_json" {
				json.Unmarshal(data, &body)
			} else if p.FileName() != "" {
				m.File, m.FileData = p.FileName(), data
			}
		}
	} else {
		json.NewDecoder(r.Body).Decode(&body)
	}
	if len([]rune(body.Content)) > 2000 {
		writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	buttons, ok := components(body.Components)
	if !ok {
		writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	if len(body.Nonce) > 0 {
		var nonce any
		if json.Unmarshal(body.Nonce, &nonce) != nil {
			writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
			return
		}
		switch n := nonce.(type) {
		case string:
			m.Nonce = n
		case float64:
			m.Nonce = strconv.FormatFloat(n, 'f', -1, 64)
		}
		if len(m.Nonce) > 25 { // Discord: an integer or a string of up to 25 characters
			writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
			return
		}
	}
	// enforce_nonce: a message the same author sent with the same nonce
	// in the past few minutes is returned, and no new one created.
	if body.EnforceNonce && m.Nonce != "" {
		for _, old := range f.msgs {
			if old.AuthorID == BotID && old.Nonce == m.Nonce && time.Since(old.Time) < 5*time.Minute {
				f.answerPost(w, old)
				return
			}
		}
	}
	m.Content, m.AllowedJSON, m.Buttons = body.Content, string(body.AllowedMentions), buttons
	if body.Reference != nil {
		m.ReplyTo = body.Reference.MessageID
	}
	f.nextID++
	m.ID = strconv.Itoa(f.nextID)
	f.msgs = append(f.msgs, m)
	f.shown = append(f.shown, Shown{Channel: ch, ID: m.ID, Content: m.Content, AllowedJSON: m.AllowedJSON})
	f.answerPost(w, m)
}

// answerPost answers a message post with m, or with a 502 while answers
// are lost (LoseAnswers).
func (f *Server) answerPost(w http.ResponseWriter, m *Msg) {
	if f.loseAnswers > 0 {
		f.loseAnswers--
		writeJSON(w, 502, map[string]any{"message": "502: Bad Gateway", "code": 0})
		return
	}
	writeJSON(w, 200, f.msgObj(m))
}

func (f *Server) history(w http.ResponseWriter, r *http.Request, ch string) {
	q := r.URL.Query()
	after, before := q.Get("after"), q.Get("before")
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit == 0 {
		limit = 50
	}
	// As Discord: the newest limit messages (before a bound, if any), but
	// with after, the limit messages right after it, the oldest ones;
	// newest first either way.
	var picked []*Msg
	for _, m := range f.msgs {
		id, _ := strconv.Atoi(m.ID)
		if m.Channel != ch || m.Deleted {
			continue
		}
		if a, _ := strconv.Atoi(after); after != "" && id <= a {
			continue
		}
		if b, _ := strconv.Atoi(before); before != "" && id >= b {
			continue
		}
		picked = append(picked, m)
	}
	if len(picked) > limit {
		if after != "" {
			picked = picked[:limit]
		} else {
			picked = picked[len(picked)-limit:]
		}
	}
	out := []map[string]any{}
	for i := len(picked) - 1; i >= 0; i-- {
		out = append(out, f.msgObj(picked[i]))
	}
	writeJSON(w, 200, out)
}

func (f *Server) find(ch, id string) *Msg {
	for _, m := range f.msgs {
		if m.ID == id && m.Channel == ch {
			return m
		}
	}
	return nil
}

func (f *Server) msgObj(m *Msg) map[string]any {
	author := map[string]any{"id": m.AuthorID, "username": "ann", "global_name": "Ann"}
	if m.AuthorID == BotID {
		author = f.botUser()
	}
	o := map[string]any{"id": m.ID, "channel_id": m.Channel, "content": m.Content, "author": author,
		"timestamp": m.Time.UTC().Format(time.RFC3339Nano), "mentions": []any{}, "mention_roles": []any{}, "attachments": []any{}}
	if m.Channel != DMChan {
		o["guild_id"] = GuildID
	}
	if m.ReplyTo != "" {
		o["message_reference"] = map[string]any{"message_id": m.ReplyTo, "channel_id": m.Channel}
	}
	if m.File != "" && m.AuthorID != BotID {
		u := m.FileURL
		if u == "" {
			u = f.srv.URL + "/cdn/a" + m.ID
		}
		o["attachments"] = []map[string]any{{"id": "a" + m.ID, "filename": m.File, "size": len(m.FileData),
			"content_type": "application/octet-stream", "url": u}}
	}
	return o
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// RateLimitFiles makes the next attachment download (from the CDN) answer
// 429 with a Retry-After of wait, in whole seconds.
func (f *Server) RateLimitFiles(wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cdnLimit = int(wait / time.Second)
}

// RedirectCDN makes the download of the attachment of message id (as
// UserPosts returned it) redirect to url.
func (f *Server) RedirectCDN(id, url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cdnMoved == nil {
		f.cdnMoved = map[string]string{}
	}
	f.cdnMoved["a"+id] = url
}

// RateLimited reports when the fake last answered a write with a 429 (the
// wait RateLimit set) and when the next write came (zero: none yet).
func (f *Server) RateLimited() (at, next time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limitedAt, f.retriedAt
}
