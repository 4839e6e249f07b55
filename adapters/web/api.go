package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"switchboard/adapters"
)

// Limits of the HTTP API.
const (
	maxBody      = 64 << 10 // bytes of a POST body
	maxText      = 16 << 10 // bytes of a message text
	maxWord      = 64       // characters of a room, sender or client id
	maxName      = 64       // characters of a display name
	maxTopic     = 256      // bytes of a topic
	defaultLimit = 200
	maxLimit     = 1000
	bodyDeadline = 15 * time.Second // to read a POST body
)

// timeLayout is RFC 3339 with milliseconds; times are formatted in UTC.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// handler routes the page and the API; deliver stores posted messages.
func (a *Adapter) handler(deliver adapters.DeliverFunc) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.servePage)
	mux.Handle("GET /static/", staticHandler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("POST /api/rooms/{room}/messages", a.postMessage(deliver))
	mux.HandleFunc("GET /api/rooms/{room}/messages", a.getMessages)
	mux.HandleFunc("GET /api/rooms/{room}/events", a.events)
	mux.HandleFunc("POST /api/rooms/{room}/press", a.postPress)
	mux.HandleFunc("POST /api/approvals/{id}", a.postApproval)
	return a.guard(mux)
}

// guard adds headers every response carries and rejects requests that a
// browser sent on behalf of another site: cross-origin POSTs (CSRF), and,
// when bound to loopback, requests whose Host is not a loopback name (DNS
// rebinding: a remote page resolving its own name to 127.0.0.1).
func (a *Adapter) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if a.loopback.Load() && !adapters.LoopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("host %q not allowed: open the chat through 127.0.0.1 or localhost", r.Host))
			return
		}
		if err := cop.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "cross-origin request rejected")
			return
		}
		if r.Method != http.MethodGet || r.ContentLength != 0 {
			// A request with a body must not hold a connection open
			// forever; the server has no ReadTimeout because event
			// streams (GETs without a body) outlive it, and a read
			// deadline would end them. The deadline stays set after the
			// body was read: net/http discards an unread rest after the
			// handler returns, and must not wait for a client that
			// stopped sending. The next request on the connection gets
			// the server's own header deadline.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(a.bodyDeadline))
		}
		next.ServeHTTP(&stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), wait: a.stallDeadline}, r)
	})
}

// stallWriter bounds how long a client may take none of a response: each
// write (in pieces of stallChunk) must be taken within wait, or the
// connection is closed. The server has no WriteTimeout, as event streams
// outlive any; without this a client that asked for a page of history and
// then read nothing would hold a goroutine and the page's bytes forever.
// A slow client that keeps reading is never cut off.
type stallWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	wait time.Duration
}

const stallChunk = 64 << 10

func (s *stallWriter) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		chunk := p[:min(len(p), stallChunk)]
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.wait)) // unsupported by recorders: fine
		m, err := s.ResponseWriter.Write(chunk)
		n += m
		if err != nil {
			return n, err
		}
		p = p[len(chunk):]
	}
	return n, nil
}

// Unwrap lets http.ResponseController reach the connection (Flush, deadlines).
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// postRequest is the body of POST /api/rooms/{room}/messages.
type postRequest struct {
	ID     string `json:"id"`     // optional client id: a retry with the same id is not stored twice
	Sender string `json:"sender"` // user name: the sender JID is web:user/<sender>
	Name   string `json:"name"`   // optional display name, default sender
	Text   string `json:"text"`
	Topic  string `json:"topic"`
}

type postResponse struct {
	ID  adapters.MessageID `json:"id"`
	Seq int64              `json:"seq"`
}

// messageView is a stored message as the API and the event stream show it.
type messageView struct {
	Seq     int64              `json:"seq"`
	ID      adapters.MessageID `json:"id"`
	Sender  string             `json:"sender"`
	Name    string             `json:"name"`
	Text    string             `json:"text"`
	Time    string             `json:"time"`
	FromBot bool               `json:"from_bot"`
	Topic   string             `json:"topic"`
	Buttons []buttonView       `json:"buttons,omitempty"` // under a message of the bot's
	// Deleted: the message was deleted (its text is not shown); it still
	// moves a page's cursor.
	Deleted bool `json:"deleted,omitempty"`
}

type messagesResponse struct {
	Messages []messageView `json:"messages"`
}

func (a *Adapter) postMessage(deliver adapters.DeliverFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		room := r.PathValue("room")
		if err := checkRoom(room); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		// Any Content-Type is accepted (curl -d sends a form type): the
		// body must parse as JSON, and cross-site browser posts are
		// already refused by the cross-origin and Host checks. The body
		// must arrive within the body deadline (guard).
		req, status, err := decodePost(w, r)
		if err != nil {
			writeError(w, status, err.Error())
			return
		}
		in, err := inbound(room, req, a.botName, time.Now())
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		in.FromHost = a.fromHost(r.RemoteAddr)
		seq, err := deliver(r.Context(), in)
		if ra, ok := errors.AsType[*adapters.RetryAfterError](err); ok {
			// Refused for now by the gateway (the loop guard): its text
			// says why and what to do.
			w.Header().Set("Retry-After", strconv.Itoa(int(max(ra.Wait.Round(time.Second), time.Second)/time.Second)))
			writeError(w, http.StatusTooManyRequests, err.Error())
			return
		}
		if err != nil {
			a.log.Warn("web message not stored", "jid", in.Chat, "msg_id", in.ID, "err", err)
			writeError(w, http.StatusServiceUnavailable, "message not stored, try again")
			return
		}
		if req.ID != "" {
			if other, ok := a.reusedID(r.Context(), in, seq); ok {
				writeJSON(w, http.StatusConflict, conflictResponse{
					Error: fmt.Sprintf("id %q is already message %d of room %s, with another sender, text or topic; this post was not stored: send it again without an id or with a new one", req.ID, seq, room),
					ID:    other.ID, Seq: other.Seq,
				})
				return
			}
		}
		writeJSON(w, http.StatusAccepted, postResponse{ID: in.ID, Seq: seq})
	}
}

// conflictResponse answers a post whose client id names a stored message
// with other content: the error and the stored message's id and seq.
type conflictResponse struct {
	Error string             `json:"error"`
	ID    adapters.MessageID `json:"id"`
	Seq   int64              `json:"seq"`
}

// reusedID reports whether the message stored as seq for in's client id is
// another message than in (another sender, text or topic): then in was a
// duplicate of it by identity (chat, id) and was not stored. A true retry
// of the same post is not. When the stored message cannot be read, the
// post is taken as a retry (it was answered so before this check).
func (a *Adapter) reusedID(ctx context.Context, in adapters.Inbound, seq int64) (adapters.Stored, bool) {
	if seq <= 0 {
		return adapters.Stored{}, false
	}
	got, err := a.history.Messages(ctx, in.Chat, seq-1, 1)
	if err != nil || len(got) == 0 || got[0].Seq != seq || got[0].ID != in.ID {
		if err != nil {
			a.log.Warn("web message not compared with its id's stored message", "jid", in.Chat, "msg_id", in.ID, "err", err)
		}
		return adapters.Stored{}, false
	}
	m := got[0]
	return m, m.Sender != in.Sender || m.Text != in.Text || m.Topic != in.Topic
}

// decodePost reads a POST body: one JSON object of known fields, at most
// maxBody bytes. On error it returns the HTTP status to answer.
func decodePost(w http.ResponseWriter, r *http.Request) (postRequest, int, error) {
	var req postRequest
	status, err := decodeJSON(w, r, &req, "sender, text, name, topic, id")
	return req, status, err
}

// decodeJSON reads a POST body into v: one JSON object of known fields (an
// unknown one is refused, naming the allowed fields), at most maxBody
// bytes, read within the body deadline. On error it returns the HTTP
// status to answer.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, fields string) (int, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return http.StatusRequestEntityTooLarge, fmt.Errorf("body is larger than %d bytes", maxBody)
		}
		return http.StatusBadRequest, fmt.Errorf("read body: %w", err)
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return http.StatusBadRequest, fmt.Errorf("body must be a JSON object with the fields %s", fields)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return http.StatusBadRequest, jsonError(err, fields)
	}
	if _, err := dec.Token(); err != io.EOF {
		return http.StatusBadRequest, errors.New("body must hold a single JSON object")
	}
	return 0, nil
}

// jsonError turns a decoding error into a message naming the field.
func jsonError(err error, fields string) error {
	if e, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && e.Field != "" {
		return fmt.Errorf("field %q must be a %s", e.Field, e.Type)
	}
	if e, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Errorf("body is not valid JSON: %s (at byte %d)", e.Error(), e.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("body is not valid JSON: unexpected end")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field") {
		return fmt.Errorf("%s: allowed fields are %s", msg, fields)
	}
	return fmt.Errorf("body is not valid JSON: %s", msg)
}

func (a *Adapter) getMessages(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	if err := checkRoom(room); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	q := r.URL.Query()
	after, err := parseAfter(q.Get("after"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit := defaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit must be a whole number from 1 to %d", maxLimit))
			return
		}
		limit = n
	}
	stored, err := a.history.Messages(r.Context(), chatJID(room), after, limit)
	if err != nil {
		a.log.Warn("web chat history not read", "jid", chatJID(room), "err", err)
		writeError(w, http.StatusServiceUnavailable, "could not read messages, try again")
		return
	}
	resp := messagesResponse{Messages: make([]messageView, 0, len(stored))}
	for _, m := range stored {
		resp.Messages = append(resp.Messages, a.viewWithButtons(r.Context(), m))
	}
	writeJSON(w, http.StatusOK, resp)
}

// view renders a stored message for the API. sender is the user name for
// web users ("ann"), the bot's name for the bot's messages, and the full
// sender JID for anyone else.
func (a *Adapter) view(m adapters.Stored) messageView {
	v := messageView{
		Seq:     m.Seq,
		ID:      m.ID,
		Sender:  string(m.Sender),
		Name:    m.SenderName,
		Text:    m.Text,
		FromBot: m.FromBot,
		Topic:   m.Topic,
	}
	if !m.Time.IsZero() {
		v.Time = m.Time.UTC().Format(timeLayout)
	}
	if user, ok := strings.CutPrefix(v.Sender, platform+":user/"); ok {
		v.Sender = user
	}
	if m.FromBot {
		v.Sender = a.botName
	}
	if v.Name == "" {
		v.Name = v.Sender
	}
	if m.Deleted {
		v.Text, v.Deleted = "", true
	}
	return v
}

// viewWithButtons is view with the buttons a message of the bot's carries.
func (a *Adapter) viewWithButtons(ctx context.Context, m adapters.Stored) messageView {
	v := a.view(m)
	if m.FromBot && !m.Deleted {
		v.Buttons = a.buttons.get(ctx, m.Chat, m.ID)
	}
	return v
}

// parseAfter parses a sequence cursor; "" is 0.
func parseAfter(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("after must be a message seq (a whole number, 0 or more)")
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // only plain structs and strings are written: cannot happen
		status, body = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
