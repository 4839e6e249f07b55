// Package telegramtest is a fake Telegram Bot API for tests: every method is
// POST /bot<token>/<method> with a multipart, JSON or form body, answered
// {"ok":true,"result":...}; getUpdates long-polls with offset semantics;
// files download from /file/bot<token>/<path>. The real SDK talks to it
// through api_url. Tests of the adapter and end-to-end tests of the binary
// use it.
package telegramtest

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// The fake's fixed world: the bot, a user, and a forum supergroup.
const (
	Token   = "123:SECRET-token"
	BotID   = 999
	BotName = "SbTestBot"
	UserID  = 7
	GroupID = -1001234 // a forum supergroup
)

// Server is the fake Bot API.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	mu                        sync.Mutex
	changed                   chan struct{} // closed and replaced on every change
	updates                   []map[string]any
	nextUpd                   int64
	confirmed                 int64 // every update below this offset was confirmed
	msgs                      map[int64][]*Msg
	nextMsg                   int
	files                     map[string][]byte // file_id -> content
	calls                     []Call
	rateLimit                 int       // the next write answers 429 with this retry_after
	limitedAt, retriedAt      time.Time // the last 429 answered, and the first write after it
	rejectFmt                 bool      // the next formatted message is refused
	refusePhotos              bool      // sendPhoto answers PHOTO_INVALID_DIMENSIONS (a very tall image)
	pollLimit                 int       // the next getUpdates answers 429 with this retry_after
	pollLimitedAt             time.Time // when it last did
	drop                      bool      // the next getUpdates fails
	rawNext                   string    // the next getUpdates answers this body
	fail5xx                   int       // so many writes answer 502
	fileRateLimit             int       // the next file download answers 429 with this Retry-After
	webhook                   bool      // a webhook is set
	webhookURL, webhookSecret string
	drafts                    map[int64][]Draft
	shown                     map[int64][]string // what each chat showed of the bot, in order
	refuseDrafts              bool               // sendMessageDraft answers 400
	queries                   map[string]*query  // callback queries by id
	nextQuery                 int
}

// Draft is one sendMessageDraft as the fake private chat showed it.
type Draft struct {
	ID     int // draft_id
	Thread int
	Text   string // as shown: HTML parsed away
	Raw    string
}

type Call struct {
	Method string
	Params map[string]string
	At     time.Time // when the fake received it
}

// Msg is a message as the fake chat holds it.
type Msg struct {
	ID        int
	FromBot   bool
	Text      string // as shown: HTML parsed away
	Raw       string
	Thread    int
	ReplyTo   int
	Deleted   bool
	Pinned    bool
	Reactions []string
	File      string
	FileData  []byte
	Buttons   []Button // its inline keyboard
}

// New starts a fake Bot API for the test; a webhook is set, as a stale
// one would be, until the bot deletes it.
func New(t testing.TB) *Server {
	f := &Server{t: t, changed: make(chan struct{}), nextUpd: 100, msgs: map[int64][]*Msg{}, nextMsg: 1,
		files: map[string][]byte{}, webhook: true, drafts: map[int64][]Draft{}, shown: map[int64][]string{}, queries: map[string]*query{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *Server) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/bot") {
		f.serveFile(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if token != Token {
		reply(w, 401, "Unauthorized", nil)
		return
	}
	params, files := parseParams(r)
	f.mu.Lock()
	f.calls = append(f.calls, Call{Method: method, Params: params, At: time.Now()})
	f.mu.Unlock()
	if method == "getUpdates" {
		f.getUpdates(w, r, params) // long-polls: takes the lock itself
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	if isWrite(method) {
		if f.fault(w) {
			return
		}
		if !f.limitedAt.IsZero() && f.retriedAt.IsZero() {
			f.retriedAt = time.Now()
		}
	}
	h, ok := methods[method]
	if !ok {
		reply(w, 404, "Not Found: method not found", nil)
		return
	}
	chat, _ := strconv.ParseInt(params["chat_id"], 10, 64)
	h(f, w, request{method: method, params: params, files: files, chat: chat})
}

// request is one Bot API call as a method handler sees it.
type request struct {
	method string
	params map[string]string
	files  map[string]upload
	chat   int64 // chat_id, 0 when absent
}

// methods are the Bot API methods the fake answers (getUpdates aside).
// Each runs with f.mu held; serve notifies waiters after it.
var methods = map[string]func(f *Server, w http.ResponseWriter, r request){
	"getMe":               (*Server).getMe,
	"deleteWebhook":       (*Server).deleteWebhook,
	"setWebhook":          (*Server).setWebhook,
	"sendMessage":         (*Server).sendMessage,
	"sendPhoto":           (*Server).sendMessage,
	"sendDocument":        (*Server).sendMessage,
	"editMessageText":     (*Server).editMessageText,
	"sendMessageDraft":    (*Server).sendMessageDraft,
	"deleteMessage":       (*Server).deleteMessage,
	"pinChatMessage":      (*Server).pinChatMessage,
	"unpinChatMessage":    (*Server).unpinChatMessage,
	"setMessageReaction":  (*Server).setMessageReaction,
	"sendChatAction":      (*Server).sendChatAction,
	"getFile":             (*Server).getFile,
	"answerCallbackQuery": (*Server).answerCallbackQuery,
}

// fault answers a write with the failure a test asked for (a 429 with
// retry_after, a 502), if any, and says whether it did.
func (f *Server) fault(w http.ResponseWriter) bool {
	if f.rateLimit > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.rateLimit))
		replyParams(w, 429, "Too Many Requests: retry after "+strconv.Itoa(f.rateLimit), map[string]any{"retry_after": f.rateLimit})
		f.rateLimit = 0
		f.limitedAt, f.retriedAt = time.Now(), time.Time{}
		return true
	}
	if f.fail5xx > 0 {
		f.fail5xx--
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>502 Bad Gateway</html>")
		return true
	}
	return false
}

func (f *Server) getMe(w http.ResponseWriter, _ request) {
	reply(w, 200, "", map[string]any{"id": BotID, "is_bot": true, "first_name": "Switchboard", "username": BotName})
}

func (f *Server) deleteWebhook(w http.ResponseWriter, _ request) {
	f.webhook = false
	reply(w, 200, "", true)
}

func (f *Server) setWebhook(w http.ResponseWriter, r request) {
	f.webhook, f.webhookURL, f.webhookSecret = true, r.params["url"], r.params["secret_token"]
	reply(w, 200, "", true)
}

// sendMessage answers sendMessage, sendPhoto and sendDocument: the text (or
// caption) parsed as Telegram would, the refusals of a too long message
// (4096) or caption (1024) or an empty text, an
// unknown chat (-4040) and a user who blocked the bot (4030).
func (f *Server) sendMessage(w http.ResponseWriter, r request) {
	raw := r.params["text"]
	if r.method != "sendMessage" {
		raw = r.params["caption"]
	}
	text := raw
	if r.params["parse_mode"] == "HTML" {
		var ok bool
		if text, ok = parseHTML(raw); !ok || f.rejectFmt {
			f.rejectFmt = false
			reply(w, 400, "Bad Request: can't parse entities: unsupported start tag at byte offset 3", nil)
			return
		}
	}
	switch {
	case r.method == "sendPhoto" && f.refusePhotos:
		reply(w, 400, "Bad Request: PHOTO_INVALID_DIMENSIONS", nil)
		return
	case len(utf16.Encode([]rune(text))) > 4096:
		reply(w, 400, "Bad Request: message is too long", nil)
		return
	case r.method == "sendMessage" && strings.TrimSpace(text) == "":
		reply(w, 400, "Bad Request: message text is empty", nil)
		return
	case r.method != "sendMessage" && len(utf16.Encode([]rune(text))) > 1024:
		reply(w, 400, "Bad Request: message caption is too long", nil)
		return
	case r.chat == -4040:
		reply(w, 400, "Bad Request: chat not found", nil)
		return
	case r.chat == 4030:
		reply(w, 403, "Forbidden: bot was blocked by the user", nil)
		return
	}
	buttons, ok := keyboard(w, r.params["reply_markup"])
	if !ok {
		return
	}
	m := &Msg{ID: f.nextMsg, FromBot: true, Text: text, Raw: raw, Thread: atoi(r.params["message_thread_id"]), Buttons: buttons}
	if rp := r.params["reply_parameters"]; rp != "" {
		var p struct {
			MessageID int `json:"message_id"`
		}
		json.Unmarshal([]byte(rp), &p)
		m.ReplyTo = p.MessageID
	}
	for _, fh := range r.files {
		m.File, m.FileData = fh.name, fh.data
	}
	f.nextMsg++
	f.msgs[r.chat] = append(f.msgs[r.chat], m)
	f.shown[r.chat] = append(f.shown[r.chat], text)
	reply(w, 200, "", map[string]any{"message_id": m.ID, "date": time.Now().Unix(), "chat": ChatObj(r.chat), "text": text})
}

func (f *Server) editMessageText(w http.ResponseWriter, r request) {
	m := f.find(r.chat, atoi(r.params["message_id"]))
	if m == nil {
		reply(w, 400, "Bad Request: message to edit not found", nil)
		return
	}
	text := r.params["text"]
	if r.params["parse_mode"] == "HTML" {
		var ok bool
		if text, ok = parseHTML(r.params["text"]); !ok || f.rejectFmt {
			f.rejectFmt = false
			reply(w, 400, "Bad Request: can't parse entities: unsupported start tag at byte offset 3", nil)
			return
		}
	}
	buttons, ok := keyboard(w, r.params["reply_markup"])
	if !ok {
		return
	}
	if r.params["text"] == m.Raw && sameKeyboard(buttons, m.Buttons) {
		reply(w, 400, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message", nil)
		return
	}
	m.Text, m.Raw, m.Buttons = text, r.params["text"], buttons // no reply_markup: the keyboard goes
	f.shown[r.chat] = append(f.shown[r.chat], text)
	reply(w, 200, "", map[string]any{"message_id": m.ID, "date": time.Now().Unix(), "chat": ChatObj(r.chat), "text": text})
}

// sendMessageDraft shows a draft in a private chat: a non-zero draft_id,
// the text parsed as sendMessage parses it, and the refusals of a group,
// a too long text and (RefuseDrafts) a bot that may not stream.
func (f *Server) sendMessageDraft(w http.ResponseWriter, r request) {
	id := atoi(r.params["draft_id"])
	raw, text := r.params["text"], r.params["text"]
	if r.params["parse_mode"] == "HTML" {
		var ok bool
		if text, ok = parseHTML(raw); !ok {
			reply(w, 400, "Bad Request: can't parse entities", nil)
			return
		}
	}
	switch {
	case f.refuseDrafts:
		reply(w, 400, "Bad Request: the bot can't send message drafts", nil)
		return
	case r.chat <= 0:
		reply(w, 400, "Bad Request: message drafts can be sent only to private chats", nil)
		return
	case id == 0:
		reply(w, 400, "Bad Request: draft_id must be non-zero", nil)
		return
	case len(utf16.Encode([]rune(text))) > 4096:
		reply(w, 400, "Bad Request: message is too long", nil)
		return
	}
	f.drafts[r.chat] = append(f.drafts[r.chat], Draft{ID: id, Thread: atoi(r.params["message_thread_id"]), Text: text, Raw: raw})
	f.shown[r.chat] = append(f.shown[r.chat], text)
	reply(w, 200, "", true)
}

// onMessage applies change to the message the request names and answers
// true, or answers that there is no such message.
func (f *Server) onMessage(w http.ResponseWriter, r request, change func(*Msg)) {
	m := f.find(r.chat, atoi(r.params["message_id"]))
	if m == nil {
		reply(w, 400, "Bad Request: message not found", nil)
		return
	}
	change(m)
	reply(w, 200, "", true)
}

func (f *Server) deleteMessage(w http.ResponseWriter, r request) {
	f.onMessage(w, r, func(m *Msg) { m.Deleted = true })
}

func (f *Server) pinChatMessage(w http.ResponseWriter, r request) {
	f.onMessage(w, r, func(m *Msg) { m.Pinned = true })
}

func (f *Server) unpinChatMessage(w http.ResponseWriter, r request) {
	f.onMessage(w, r, func(m *Msg) { m.Pinned = false })
}

// setMessageReaction replaces the bot's reactions on the message.
func (f *Server) setMessageReaction(w http.ResponseWriter, r request) {
	f.onMessage(w, r, func(m *Msg) {
		var rs []struct{ Emoji string }
		json.Unmarshal([]byte(r.params["reaction"]), &rs)
		m.Reactions = nil
		for _, x := range rs {
			m.Reactions = append(m.Reactions, x.Emoji)
		}
	})
}

func (f *Server) sendChatAction(w http.ResponseWriter, _ request) {
	reply(w, 200, "", true)
}

// getFile answers the file's path under /file/bot<token>/.
func (f *Server) getFile(w http.ResponseWriter, r request) {
	id := r.params["file_id"]
	if _, ok := f.files[id]; !ok {
		reply(w, 400, "Bad Request: invalid file_id", nil)
		return
	}
	reply(w, 200, "", map[string]any{"file_id": id, "file_path": "documents/" + id + ".bin"})
}

func isWrite(method string) bool {
	return strings.HasPrefix(method, "send") && method != "sendChatAction" || method == "editMessageText"
}

func (f *Server) find(chat int64, id int) *Msg {
	for _, m := range f.msgs[chat] {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (f *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/bot")
	token, path, _ := strings.Cut(rest, "/")
	if token != Token {
		http.Error(w, "unauthorized", 401)
		return
	}
	id := strings.TrimSuffix(strings.TrimPrefix(path, "documents/"), ".bin")
	f.mu.Lock()
	data, ok := f.files[id]
	wait := f.fileRateLimit
	f.fileRateLimit = 0
	f.mu.Unlock()
	if wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Write(data)
}

// getUpdates long-polls: it confirms updates below offset and answers those
// at or above it, waiting up to timeout seconds for one to arrive.
func (f *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	timeout := time.Duration(atoi(p["timeout"])) * time.Second
	deadline := time.After(timeout)
	for {
		f.mu.Lock()
		if f.webhook {
			f.mu.Unlock()
			reply(w, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first", nil)
			return
		}
		if f.pollLimit > 0 {
			wait := f.pollLimit
			f.pollLimit, f.pollLimitedAt = 0, time.Now()
			f.mu.Unlock()
			replyParams(w, 429, "Too Many Requests: retry after "+strconv.Itoa(wait), map[string]any{"retry_after": wait})
			return
		}
		if f.drop {
			f.drop = false
			f.mu.Unlock()
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		if offset > f.confirmed {
			f.confirmed = offset
			f.notify()
		}
		if raw := f.rawNext; raw != "" {
			f.rawNext = ""
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, raw)
			return
		}
		var out []map[string]any
		for _, u := range f.updates {
			if u["update_id"].(int64) >= offset {
				out = append(out, u)
			}
		}
		ch := f.changed
		f.mu.Unlock()
		if len(out) > 0 || timeout == 0 {
			reply(w, 200, "", out)
			return
		}
		select {
		case <-ch:
		case <-deadline:
			reply(w, 200, "", []any{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// Push queues an update and returns its id.
func (f *Server) Push(kind string, body map[string]any) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextUpd++
	f.updates = append(f.updates, map[string]any{"update_id": f.nextUpd, kind: body})
	f.notify()
	return f.nextUpd
}

// UserMessage is a message from user 7 in chat, addressed to the bot when
// mention, in forum topic thread (0: none), replying to replyTo (0: none).
func (f *Server) UserMessage(chat int64, text string, mention bool, thread, replyTo int) (map[string]any, int) {
	f.mu.Lock()
	id := f.nextMsg
	f.nextMsg++
	f.msgs[chat] = append(f.msgs[chat], &Msg{ID: id, Text: text})
	f.mu.Unlock()
	m := map[string]any{"message_id": id, "date": time.Now().Unix(), "chat": ChatObj(chat),
		"from": map[string]any{"id": UserID, "is_bot": false, "first_name": "Ann", "username": "ann"}, "text": text}
	if mention {
		m["text"] = "@" + BotName + " " + text
		m["entities"] = []map[string]any{{"type": "mention", "offset": 0, "length": len(BotName) + 1}}
	}
	if thread != 0 {
		m["message_thread_id"], m["is_topic_message"] = thread, true
	}
	if replyTo != 0 {
		from := map[string]any{"id": UserID, "is_bot": false, "first_name": "Ann"}
		f.mu.Lock()
		if r := f.find(chat, replyTo); r != nil && r.FromBot {
			from = map[string]any{"id": BotID, "is_bot": true, "first_name": "Switchboard", "username": BotName}
		}
		f.mu.Unlock()
		m["reply_to_message"] = map[string]any{"message_id": replyTo, "date": time.Now().Unix(), "chat": ChatObj(chat), "from": from}
	}
	return m, id
}

func ChatObj(id int64) map[string]any {
	if id > 0 {
		return map[string]any{"id": id, "type": "private", "first_name": "Ann"}
	}
	if id < -1000000000 || id == GroupID {
		return map[string]any{"id": id, "type": "supergroup", "title": "Ops", "is_forum": true}
	}
	return map[string]any{"id": id, "type": "group", "title": "Old group"}
}

// WaitConfirmed waits until Telegram would have forgotten update id.
func (f *Server) WaitConfirmed(t testing.TB, id int64) {
	t.Helper()
	f.WaitFor(t, fmt.Sprintf("update %d confirmed", id), func() bool { return f.Confirmed() > id })
}

// WaitFor waits until cond holds (checked after every change of the
// fake); cond may call the fake's methods. After 10 s it fails t.
func (f *Server) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
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
			t.Fatalf("fake telegram: timed out waiting for %s", what)
		}
	}
}

func (f *Server) Calls(method string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

type upload struct {
	name string
	data []byte
}

// parseParams reads a multipart, JSON or urlencoded body into strings (JSON
// objects stay JSON), and multipart files.
func parseParams(r *http.Request) (map[string]string, map[string]upload) {
	out, files := map[string]string{}, map[string]upload{}
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "multipart/"):
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return out, files
		}
		for k, v := range r.MultipartForm.Value {
			out[k] = v[0]
		}
		for k, fhs := range r.MultipartForm.File {
			fh, _ := fhs[0].Open()
			data, _ := io.ReadAll(fh)
			fh.Close()
			files[k] = upload{name: fhs[0].Filename, data: data}
		}
	case strings.HasPrefix(ct, "application/json"):
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			} else {
				b, _ := json.Marshal(v)
				out[k] = string(b)
			}
		}
	default:
		r.ParseForm()
		for k, v := range r.PostForm {
			out[k] = v[0]
		}
	}
	// Read the body to its end: only then does net/http watch the
	// connection and cancel the request's context when the client goes
	// away; a long poll of a killed gateway would otherwise hold the
	// server's Close until its timeout.
	io.Copy(io.Discard, r.Body)
	return out, files
}

func reply(w http.ResponseWriter, code int, desc string, result any) {
	replyParams(w, code, desc, nil, result)
}

func replyParams(w http.ResponseWriter, code int, desc string, params map[string]any, result ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	body := map[string]any{"ok": code == 200}
	if code == 200 {
		body["result"] = result[0]
	} else {
		body["error_code"], body["description"] = code, desc
		if params != nil {
			body["parameters"] = params
		}
	}
	json.NewEncoder(w).Encode(body)
}

var tagRE = regexp.MustCompile(`<(/?)([a-z-]+)[^>]*>`)

// parseHTML does what Telegram's parser does with parse_mode HTML: only its
// tags, balanced, and entities; it returns the text as shown.
func parseHTML(s string) (string, bool) {
	allowed := map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "s": true, "code": true, "pre": true,
		"a": true, "blockquote": true, "tg-spoiler": true}
	var stack []string
	for _, m := range tagRE.FindAllStringSubmatch(s, -1) {
		if !allowed[m[2]] {
			return "", false
		}
		if m[1] == "" {
			stack = append(stack, m[2])
		} else if len(stack) == 0 || stack[len(stack)-1] != m[2] {
			return "", false
		} else {
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 || strings.Count(s, "<") != len(tagRE.FindAllString(s, -1)) {
		return "", false
	}
	return html.UnescapeString(tagRE.ReplaceAllString(s, "")), true
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// URL is the Bot API base to give the adapter as api_url.
func (f *Server) URL() string { return f.srv.URL }

// WebhookSet reports whether a webhook is still set.
func (f *Server) WebhookSet() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.webhook
}

// Confirmed is the offset below which Telegram forgot every update.
func (f *Server) Confirmed() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.confirmed
}

// ReserveUpdateID returns a fresh update id that no queued update has, for
// an update that only an AnswerNext body carries.
func (f *Server) ReserveUpdateID() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextUpd++
	return f.nextUpd
}

// AnswerNext makes the next getUpdates answer body verbatim (status 200),
// whatever updates are queued: a malformed or hostile answer.
func (f *Server) AnswerNext(body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rawNext = body
	f.notify()
}

// AddFile makes a file downloadable by its file id.
func (f *Server) AddFile(id string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[id] = data
}

// Messages returns a copy of what chat holds, oldest first.
func (f *Server) Messages(chat int64) []Msg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Msg
	for _, m := range f.msgs[chat] {
		out = append(out, *m)
	}
	return out
}

// RateLimit makes the next write answer 429 asking to wait: Telegram's
// retry_after is whole seconds, so wait is rounded, to at least 1 s.
func (f *Server) RateLimit(wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rateLimit = max(int(wait.Round(time.Second)/time.Second), 1)
}

// RefusePhotos makes sendPhoto refuse every image as Telegram refuses a
// very tall or wide one (PHOTO_INVALID_DIMENSIONS); sendDocument takes it.
func (f *Server) RefusePhotos() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusePhotos = true
}

// RateLimitPolls makes the next getUpdates answer 429 asking to wait (whole
// seconds, at least 1) and returns nothing; PollLimitedAt says when it did.
func (f *Server) RateLimitPolls(wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pollLimit = max(int(wait.Round(time.Second)/time.Second), 1)
}

// PollLimitedAt is when a getUpdates was last answered with
// RateLimitPolls's 429 (zero: never).
func (f *Server) PollLimitedAt() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pollLimitedAt
}

// RateLimitFiles makes the next file download answer 429 with a
// Retry-After of wait, in whole seconds.
func (f *Server) RateLimitFiles(wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fileRateLimit = int(wait / time.Second)
}

// Fail5xx makes the next n writes answer 502.
func (f *Server) Fail5xx(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail5xx = n
}

// Drafts returns the drafts chat showed, oldest first.
func (f *Server) Drafts(chat int64) []Draft {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Draft(nil), f.drafts[chat]...)
}

// Shown returns, oldest first, every text chat showed of the bot: each
// message as sent, each edit, each draft (HTML parsed away).
func (f *Server) Shown(chat int64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.shown[chat]...)
}

// RefuseDrafts makes every sendMessageDraft answer 400, as Telegram does
// for a bot that may not stream drafts.
func (f *Server) RefuseDrafts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseDrafts = true
}

// RejectFormatting makes the next formatted message fail to parse.
func (f *Server) RejectFormatting() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejectFmt = true
}

// Drop closes the connection of the current (or next) getUpdates.
func (f *Server) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop = true
	f.notify()
}

// WaitBotMessage waits until the bot posted a message in chat that match
// accepts, and returns it.
func (f *Server) WaitBotMessage(t testing.TB, chat int64, what string, match func(Msg) bool) Msg {
	t.Helper()
	var found Msg
	f.WaitFor(t, what, func() bool {
		for _, m := range f.Messages(chat) {
			if m.FromBot && match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// Webhook returns the webhook URL and secret token the bot registered.
func (f *Server) Webhook() (url, secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.webhookURL, f.webhookSecret
}

// RateLimited reports when the fake last answered a write with a 429 (the
// wait RateLimit set) and when the next write came (zero: none yet).
func (f *Server) RateLimited() (at, next time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limitedAt, f.retriedAt
}
