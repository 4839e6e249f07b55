package ipc

// The JSON-RPC transport of a connection: one MCP session per unix-socket
// connection, newline-delimited JSON-RPC read by serve, requests served by a
// small worker pool, responses and notifications written by connWriter.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const (
	maxInflight  = 16               // requests served at once per connection
	writeTimeout = 30 * time.Second // a client that stops reading is dropped
	drainTimeout = 30 * time.Second // after the client's EOF, in-flight requests get this long
)

// session is one connection: one MCP session acting as its group.
type session struct {
	id    string
	g     *group
	conn  *net.UnixConn
	notes chan mcp.JSONRPCNotification // never closed: mcp-go may still hold it

	initialized atomic.Bool
	legacy      atomic.Bool // the client used the initialize handshake
	// changed wakes the notification writer when toolsChanged left a
	// list_changed to write (capacity 1: one wake-up covers any number).
	changed chan struct{}
	// listChanged counts the list_changed notifications toolsChanged has
	// left for the writer: which sessions a change reaches is decided
	// synchronously in Sync, while the writing is not, so this is what a
	// test can check exactly, including that nothing was sent.
	listChanged atomic.Int64

	mu sync.Mutex
	// streams are the open subscriptions/listen streams (protocol
	// 2026-07-28) by idKey of their request: a client may hold several on
	// one connection, each with its own filter.
	streams map[string]*listenStream
	// toolsPending: a list_changed for a session without streams waits for
	// the writer.
	toolsPending bool
	// inflight holds the requests the workers are serving, by idKey.
	inflight  map[string]inflightReq
	closeOnce sync.Once
}

var (
	_ server.ClientSession                 = (*session)(nil)
	_ server.SessionWithSubscriptionFilter = (*session)(nil)
	_ server.SessionWithSubscriptionFilter = (*listenStream)(nil)
)

func (s *Server) newSession(g *group, c *net.UnixConn) *session {
	return &session{
		id:       string(g.folder) + "#" + strconv.FormatInt(s.seq.Add(1), 10),
		g:        g,
		conn:     c,
		notes:    make(chan mcp.JSONRPCNotification, 16),
		changed:  make(chan struct{}, 1),
		streams:  map[string]*listenStream{},
		inflight: map[string]inflightReq{},
	}
}

func (c *session) SessionID() string                                   { return c.id }
func (c *session) Initialize()                                         { c.initialized.Store(true) }
func (c *session) Initialized() bool                                   { return c.initialized.Load() }
func (c *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.notes }

// listenStream is the session as one subscriptions/listen request
// (protocol 2026-07-28) sees it: dispatch hands mcp-go this view of the
// session for the request, so that the filter mcp-go records for the stream
// (and the zero filter it records when the stream ends) is this stream's
// alone. Every other method is the session's.
type listenStream struct {
	*session
	key string // idKey of the request's id
	id  any    // the request's id: tags every notification of the stream

	// Guarded by session.mu.
	filter       mcp.SubscriptionFilter
	toolsPending bool // a list_changed for this stream waits for the writer
}

// SetSubscriptionFilter opens the stream with what it opted in to; the zero
// filter ends it (and only it). A stream that opted in to nothing receives
// nothing, so it is not recorded.
func (l *listenStream) SetSubscriptionFilter(f mcp.SubscriptionFilter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f.IsEmpty() {
		if l.streams[l.key] == l { // not a later request that reused the id
			delete(l.streams, l.key)
		}
		return
	}
	l.filter = f
	l.streams[l.key] = l
}

// SetSubscriptionFilter is never called by mcp-go for the session itself:
// dispatch serves every subscriptions/listen with its own listenStream.
func (c *session) SetSubscriptionFilter(mcp.SubscriptionFilter) {}

// SubscriptionFilter reports what the session's open streams opted in to
// together, and whether any is open: what mcp-go's own broadcasts go by.
func (c *session) SubscriptionFilter() (mcp.SubscriptionFilter, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all mcp.SubscriptionFilter
	for _, l := range c.streams {
		all.ToolsListChanged = all.ToolsListChanged || l.filter.ToolsListChanged
		all.PromptsListChanged = all.PromptsListChanged || l.filter.PromptsListChanged
		all.ResourcesListChanged = all.ResourcesListChanged || l.filter.ResourcesListChanged
		all.ResourceSubscriptions = append(all.ResourceSubscriptions, l.filter.ResourceSubscriptions...)
	}
	return all, len(c.streams) > 0
}

// toolsChanged leaves notifications/tools/list_changed for the writer where
// the client can take it: on every open stream that asked for
// toolsListChanged, tagged with that stream's id (notifications are opt-in
// from 2026-07-28); without streams, to a legacy session after initialize.
// Pending notifications are flags, not queued messages, so repeated changes
// coalesce and none is lost to a full queue.
func (c *session) toolsChanged() {
	c.mu.Lock()
	n := 0
	for _, l := range c.streams {
		if l.filter.ToolsListChanged {
			l.toolsPending = true
			n++
		}
	}
	if len(c.streams) == 0 && c.legacy.Load() && c.initialized.Load() {
		c.toolsPending = true
		n++
	}
	c.listChanged.Add(int64(n))
	c.mu.Unlock()
	if n > 0 {
		select {
		case c.changed <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// takeChanged returns the pending list_changed notifications and clears
// them. A stream that ended meanwhile has left c.streams, and its pending
// notification with it.
func (c *session) takeChanged() []mcp.JSONRPCNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []mcp.JSONRPCNotification
	if c.toolsPending {
		c.toolsPending = false
		out = append(out, toolsListChanged(nil))
	}
	for _, l := range c.streams {
		if l.toolsPending {
			l.toolsPending = false
			out = append(out, toolsListChanged(l.id))
		}
	}
	return out
}

// toolsListChanged is the notification, tagged with the subscription id of
// the stream that carries it unless subscription is nil.
func toolsListChanged(subscription any) mcp.JSONRPCNotification {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: mcp.MethodNotificationToolsListChanged}}
	if subscription != nil {
		n.Params.Meta = map[string]any{mcp.MetaKeySubscriptionID: subscription}
	}
	return n
}

func (c *session) close() { c.closeOnce.Do(func() { c.conn.Close() }) }

// inflightReq is a request a worker is serving.
type inflightReq struct {
	// cancelled: the client cancelled it with notifications/cancelled; its
	// response is then not sent (the client has forgotten the id, and for
	// subscriptions/listen a result would announce a server-side close).
	cancelled bool
	// cancel ends its context, where mcp-go does not: on the direct path.
	cancel context.CancelFunc
}

// begin records a request handed to a worker; cancel (or nil) cancels it.
func (c *session) begin(key string, cancel context.CancelFunc) {
	c.mu.Lock()
	c.inflight[key] = inflightReq{cancel: cancel}
	c.mu.Unlock()
}

// finish forgets a served request; false when the client cancelled it,
// so that its response must not be sent.
func (c *session) finish(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cancelled := c.inflight[key].cancelled
	delete(c.inflight, key)
	return !cancelled
}

// cancelled marks the request a notifications/cancelled line names, if it
// is still being served, and cancels its context (mcp-go cancels the
// context of the requests it serves itself as well).
func (c *session) cancelled(line []byte) {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil || len(n.Params.RequestID) == 0 {
		return
	}
	key := idKey(n.Params.RequestID)
	c.mu.Lock()
	r, ok := c.inflight[key]
	if ok {
		r.cancelled = true
		c.inflight[key] = r
	}
	c.mu.Unlock()
	if ok && r.cancel != nil {
		r.cancel()
	}
}

// head is what the read loop looks at in a message before handing it on.
type head struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// socketHead is what the socket's read loop decodes of a message: its head,
// and the params, kept for the direct path of a tools/call.
type socketHead struct {
	head
	Params json.RawMessage `json:"params"`
}

// serve runs one connection. The read loop hands each request to a worker
// (at most maxInflight per connection, reused so that their grown stacks
// are too); notifications run in the read loop, since they must not wait
// behind requests. Workers write their responses themselves under the
// connection's write lock, and a small goroutine writes the session's
// notifications the same way.
func (s *Server) serve(sess *session) {
	defer s.wg.Done()
	defer s.dropSession(sess)
	defer sess.close()

	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	// subscriptions/listen blocks until its context ends; it ends at the
	// client's EOF, while ordinary requests may still finish and answer.
	listenCtx, stopListening := context.WithCancel(ctx)
	defer stopListening()

	if err := s.mcp.RegisterSession(ctx, sess); err != nil {
		s.log.Error("register mcp session", "folder", sess.g.folder, "err", err)
		return
	}
	defer s.mcp.UnregisterSession(context.WithoutCancel(ctx), sess.id)
	ctx = s.mcp.WithContext(ctx, sess) // listenCtx gets each stream's view in dispatch
	s.log.Debug("mcp session opened", "folder", sess.g.folder, "session", sess.id)

	w := &connWriter{s: s, sess: sess, cancel: cancel, w: bufio.NewWriterSize(sess.conn, 16<<10)}
	notesDone := make(chan struct{})
	go func() {
		defer close(notesDone)
		w.notifications(ctx)
	}()
	p := &workers{s: s, sess: sess, w: w, jobs: make(chan job)}

	r := bufio.NewReaderSize(sess.conn, 16<<10)
	for {
		line, over, err := readLine(r, s.opt.MaxLine)
		if over != nil {
			w.send(rpcError(over.id(), mcp.INVALID_REQUEST, fmt.Sprintf("message too large: one JSON-RPC message may be at most %d bytes", s.opt.MaxLine)))
		} else if len(line) > 0 {
			if !s.dispatch(ctx, listenCtx, sess, line, w, p) {
				break
			}
		}
		if err != nil {
			break
		}
	}
	// The client is gone or half-closed: stop listen streams, let ordinary
	// requests finish (bounded), then close.
	stopListening()
	close(p.jobs)
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
		cancel()
		<-done
	case <-ctx.Done():
		<-done
	}
	cancel()
	<-notesDone
	s.log.Debug("mcp session closed", "folder", sess.g.folder, "session", sess.id)
}

// job is one request for a worker.
type job struct {
	ctx    context.Context
	line   []byte
	key    string        // idKey of the request's id
	stream *listenStream // for subscriptions/listen
	// direct: a tools/call that may take the direct path (directcall.go);
	// ctx is then cancelled by notifications/cancelled, and by the worker
	// when the call is over.
	direct     bool
	cancel     context.CancelFunc
	id, params json.RawMessage // of a direct call
}

// workers serve a connection's requests: up to maxInflight goroutines,
// started on demand and kept until the connection ends.
type workers struct {
	s    *Server
	sess *session
	w    *connWriter
	jobs chan job // unbuffered: a send succeeds when a worker is idle
	n    int
	wg   sync.WaitGroup
}

// submit hands j to an idle worker, starts one, or waits for one; false
// when the connection ended meanwhile.
func (p *workers) submit(ctx context.Context, j job) bool {
	select {
	case p.jobs <- j:
		return true
	default:
	}
	if p.n < maxInflight {
		p.n++
		p.wg.Add(1)
		go p.work(j)
		return true
	}
	select {
	case p.jobs <- j:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *workers) work(j job) {
	defer p.wg.Done()
	for {
		var resp mcp.JSONRPCMessage
		if j.direct {
			resp = p.s.callDirect(j.ctx, p.sess, j.id, j.params)
		}
		if resp == nil {
			resp = p.s.handle(j.ctx, p.sess, j.line)
		}
		if j.cancel != nil {
			j.cancel()
		}
		if j.stream != nil {
			// mcp-go has ended the stream already; make sure, before its
			// result goes out.
			j.stream.SetSubscriptionFilter(mcp.SubscriptionFilter{})
		}
		if p.sess.finish(j.key) && resp != nil {
			p.w.send(resp)
		}
		var ok bool
		if j, ok = <-p.jobs; !ok {
			return
		}
	}
}

// dispatch handles one line. It returns false when the connection is over.
func (s *Server) dispatch(ctx, listenCtx context.Context, sess *session, line []byte, w *connWriter, p *workers) bool {
	var h socketHead
	if err := json.Unmarshal(line, &h); err != nil {
		var syntax *json.SyntaxError
		switch {
		case errors.As(err, &syntax):
			w.send(rpcError(nil, mcp.PARSE_ERROR, "parse error: the line is not valid JSON"))
		case line[0] == '[':
			w.send(rpcError(nil, mcp.INVALID_REQUEST, "invalid request: JSON-RPC batches are not supported; send one message per line"))
		default:
			w.send(rpcError(nil, mcp.INVALID_REQUEST, "invalid request: want a JSON-RPC 2.0 object with jsonrpc, method and (for requests) id"))
		}
		return true
	}
	hasID := len(h.ID) > 0 && !bytes.Equal(h.ID, []byte("null"))
	switch {
	case h.Method == "" && (len(h.Result) > 0 || len(h.Error) > 0):
		return true // a response to a server request; this server sends none
	case h.Method == "":
		w.send(rpcError(rawID(h.ID), mcp.INVALID_REQUEST, "invalid request: missing method"))
		return true
	case !hasID:
		// A notification (initialized, cancelled): no answer, and it must not
		// wait behind a request, so it runs here.
		if h.Method == string(mcp.MethodNotificationCancelled) {
			sess.cancelled(line)
		}
		s.handle(ctx, sess, line)
		return true
	}
	reqCtx, key := ctx, idKey(h.ID)
	var stream *listenStream
	var direct bool
	var cancel context.CancelFunc
	switch mcp.MCPMethod(h.Method) {
	case mcp.MethodInitialize:
		// In order: what the client sends next assumes the handshake is done.
		sess.legacy.Store(true)
		if resp := s.handle(ctx, sess, line); resp != nil {
			w.send(resp)
		}
		return true
	case mcp.MethodToolsCall:
		reqCtx = context.WithValue(ctx, callKey{}, true)
		if h.JSONRPC == mcp.JSONRPC_VERSION && sess.legacy.Load() && sess.initialized.Load() {
			direct = true
			reqCtx, cancel = context.WithCancel(reqCtx)
		}
	case mcp.MethodSubscriptionsListen:
		stream = &listenStream{session: sess, key: key, id: rawID(h.ID)}
		reqCtx = s.mcp.WithContext(listenCtx, stream)
	}
	sess.begin(key, cancel)
	j := job{ctx: reqCtx, line: line, key: key, stream: stream, direct: direct, cancel: cancel}
	if direct {
		j.id, j.params = h.ID, h.Params
	}
	if !p.submit(ctx, j) {
		if cancel != nil {
			cancel()
		}
		return false
	}
	return true
}

// handle runs one message through mcp-go, turning a panic into an internal
// error instead of a dead gateway.
func (s *Server) handle(ctx context.Context, sess *session, line []byte) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("mcp handler panic", "folder", sess.g.folder, "panic", r)
			var h head
			_ = json.Unmarshal(line, &h)
			resp = rpcError(rawID(h.ID), mcp.INTERNAL_ERROR, "internal error")
		}
	}()
	return s.mcp.HandleMessage(ctx, json.RawMessage(line))
}

// connWriter is a connection's writing side: one JSON message per line,
// whole lines only. After a write error (or a client that stops reading for
// writeTimeout) it ends the connection and drops what follows.
type connWriter struct {
	s      *Server
	sess   *session
	cancel context.CancelFunc
	mu     sync.Mutex
	w      *bufio.Writer
	broken bool
}

func (w *connWriter) send(msg any) {
	bp := lineBufs.Get().(*[]byte)
	defer putLineBuf(bp)
	b, err := appendMessage((*bp)[:0], msg)
	if err != nil {
		w.s.log.Error("encode mcp message", "folder", w.sess.g.folder, "err", err)
		return
	}
	*bp = b
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLine(b)
}

// lineBufs holds the buffers messages are encoded into before a write.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// putLineBuf returns a buffer to lineBufs unless one large message grew it.
func putLineBuf(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		lineBufs.Put(bp)
	}
}

// sendChanged writes the pending list_changed notifications. They are taken
// under the write lock, and a stream leaves sess.streams before its worker
// writes its result, so a stream's notification never follows its result.
func (w *connWriter) sendChanged() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.sess.takeChanged() {
		b, err := json.Marshal(n)
		if err != nil {
			w.s.log.Error("encode mcp message", "folder", w.sess.g.folder, "err", err)
			continue
		}
		w.writeLine(b)
	}
}

// writeLine writes one message and a newline; w.mu must be held.
func (w *connWriter) writeLine(b []byte) {
	if w.broken {
		return
	}
	_ = w.sess.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := w.w.Write(append(b, '\n'))
	if err == nil {
		err = w.w.Flush()
	}
	if err != nil {
		w.broken = true
		if !errors.Is(err, net.ErrClosed) {
			w.s.log.Debug("mcp write failed; closing session", "folder", w.sess.g.folder, "session", w.sess.id, "err", err)
		}
		w.cancel()
		w.sess.close()
	}
}

// notifications writes the session's notifications until ctx ends: those
// mcp-go queues and the list_changed that toolsChanged leaves.
func (w *connWriter) notifications(ctx context.Context) {
	for {
		select {
		case n := <-w.sess.notes:
			w.send(n)
		case <-w.sess.changed:
			// What mcp-go queued first (a stream's acknowledgement) first.
			for drained := false; !drained; {
				select {
				case n := <-w.sess.notes:
					w.send(n)
				default:
					drained = true
				}
			}
			w.sendChanged()
		case <-ctx.Done():
			return
		}
	}
}

// ReadLine reads one message of the MCP stdio framing: a newline-terminated
// line of at most max bytes (without the newline, surrounding whitespace
// trimmed). A longer line is consumed and reported as tooLong. err is io.EOF
// (or the read error) at the end; a final line without newline is returned
// with it. The sockets and mcp-bridge's HTTP side read with it.
func ReadLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	line, over, err := readLine(r, max)
	return line, over != nil, err
}

// overlong is what readLine keeps of a line over the limit: its first and
// last bytes (up to overlongKeep each), where a request's id is.
type overlong struct{ head, tail []byte }

const overlongKeep = 256

// readLine is ReadLine; a line over limit comes back as nil with its head
// and tail (over).
func readLine(r *bufio.Reader, limit int) (line []byte, over *overlong, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case over == nil && len(buf)+len(chunk) <= limit+1: // +1: the newline
			buf = append(buf, chunk...)
		case over == nil:
			buf = append(buf, chunk...)
			over = &overlong{head: bytes.Clone(buf[:min(len(buf), overlongKeep)])}
			over.tail = bytes.Clone(buf[max(0, len(buf)-overlongKeep):])
			buf = nil
		default:
			over.tail = append(over.tail, chunk...)
			over.tail = bytes.Clone(over.tail[max(0, len(over.tail)-overlongKeep):])
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over != nil {
			over.head, over.tail = bytes.TrimSpace(over.head), bytes.TrimSpace(over.tail)
			return nil, over, err
		}
		return bytes.TrimSpace(buf), nil, err
	}
}

// The id of a request too large to read, where it can be told for sure
// without the rest: first in the object, as Go and Python clients write
// requests ({"jsonrpc":"2.0","id":7,"method":...), or last, as the
// TypeScript SDK (Claude Code's) does (...,"jsonrpc":"2.0","id":7}). The
// error then answers that request, and its client does not wait for an
// answer until its own timeout.
var (
	overlongHeadID = regexp.MustCompile(`^\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?[0-9]{1,18}|"[^"\\]{0,128}")\s*,`)
	overlongTailID = regexp.MustCompile(`,\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?[0-9]{1,18}|"[^"\\]{0,128}")\s*\}$`)
)

// rawRequestID is the request id of an overlong line as written, nil
// when it cannot be told.
func (o *overlong) rawRequestID() json.RawMessage {
	for _, m := range [][][]byte{overlongHeadID.FindSubmatch(o.head), overlongTailID.FindSubmatch(o.tail)} {
		if m != nil {
			return m[1]
		}
	}
	return nil
}

// id is rawRequestID decoded for echoing back (nil when none).
func (o *overlong) id() any { return rawID(o.rawRequestID()) }

// rawID decodes a JSON-RPC id for echoing back (nil when absent or invalid).
func rawID(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var id mcp.RequestId
	if err := json.Unmarshal(raw, &id); err != nil {
		return nil
	}
	return id.Value()
}

// idKey is a request id as a map key: the same for the id of a request and
// the requestId of its notifications/cancelled ("int64:7", "string:a").
func idKey(raw json.RawMessage) string {
	if isPlainInt(raw) {
		// What RequestId gives for it, without decoding it twice.
		return "int64:" + string(raw)
	}
	var id mcp.RequestId
	if err := json.Unmarshal(raw, &id); err != nil {
		return "invalid:" + string(raw)
	}
	return id.String()
}

// isPlainInt reports whether raw is a JSON integer in its canonical form
// (no sign but -, no leading zero, no fraction or exponent) that an int64
// holds exactly: one that mcp.RequestId keys as "int64:" and its digits.
func isPlainInt(raw []byte) bool {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) || string(raw) == "-0" {
		return false // past 15 digits a float64 may round it: leave it to RequestId
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func rpcError(id any, code int, msg string) mcp.JSONRPCError {
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
		Error: mcp.NewJSONRPCErrorDetails(code, msg, nil)}
}
