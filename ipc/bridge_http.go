package ipc

// The bridge over HTTP (mcp-bridge --url): stdio on one side, MCP Streamable
// HTTP on the other, so that an MCP client that starts a command (Claude
// Code's .mcp.json) reaches a gateway's MCP HTTP endpoint from another
// machine or network namespace.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// bridgeMaxLine bounds one JSON-RPC message read from stdin.
const bridgeMaxLine = 4 << 20

// HTTPClient is an HTTP client for the MCP endpoint; caFile, when set, is a
// PEM file of certificates trusted besides the system's (a gateway with a
// self-signed mcp.tls_cert).
func HTTPClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr}, nil
}

// httpBridge joins stdio to the endpoint. Each line from stdin is POSTed
// (requests concurrently, notifications and initialize in order); each
// message of the answer (JSON or an SSE stream) goes to stdout as a line. A
// legacy session (initialize handshake) also gets a GET stream for the
// server's notifications; a 2026-07-28 client gets them on its own
// subscriptions/listen request.
type httpBridge struct {
	url   string
	token string
	hc    *http.Client
	out   io.Writer
	errw  io.Writer

	outMu sync.Mutex

	mu        sync.Mutex
	sessionID string // legacy: from the initialize response
	version   string // legacy: the negotiated protocol version
	getStream bool

	said401 sync.Once
}

// HTTPEndpoint is the gateway's MCP HTTP endpoint (mcp.listen) as a bridge
// reaches it. Token is a secret: it goes in the Authorization header only.
type HTTPEndpoint struct {
	URL    string       // e.g. https://gw.example.net:8422/mcp
	Token  string       // the bearer token, which names the group
	Client *http.Client // see HTTPClient
}

// BridgeHTTP joins stdio to the endpoint until stdin ends and the answers to
// the requests sent so far have arrived (bounded by the flush timeout), or
// ctx ends. Requests the gateway does not answer with JSON-RPC (an HTTP
// error) are answered on stdout with a JSON-RPC error; warnings go to stderr.
func BridgeHTTP(ctx context.Context, ep HTTPEndpoint, stdin io.Reader, stdout, stderr io.Writer) error {
	b := &httpBridge{url: ep.URL, token: ep.Token, hc: ep.Client, out: stdout, errw: stderr}
	// Listen streams (subscriptions/listen, the GET stream) end with stdin;
	// ordinary requests may still answer, bounded by bridgeFlushTimeout.
	listenCtx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	reqCtx, cancelRequests := context.WithCancel(ctx)
	defer cancelRequests()
	var inflight, listens sync.WaitGroup

	r := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, over, err := readLine(r, bridgeMaxLine)
		if over != nil {
			// Answered where its id can be told, or the agent would wait
			// for the answer until its own timeout.
			b.fail(over.rawRequestID(), fmt.Sprintf("a message longer than %d bytes was dropped", bridgeMaxLine))
		} else if len(line) > 0 {
			var h struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(line, &h)
			hasID := len(h.ID) > 0 && !bytes.Equal(h.ID, []byte("null"))
			switch {
			case h.Method == string(mcp.MethodInitialize) || !hasID:
				b.post(reqCtx, line, h.ID, h.Method) // in order
				if h.Method == string(mcp.MethodInitialize) {
					b.startGET(listenCtx, &listens)
				}
			case h.Method == string(mcp.MethodSubscriptionsListen):
				listens.Go(func() { b.post(listenCtx, line, h.ID, h.Method) })
			default:
				inflight.Go(func() { b.post(reqCtx, line, h.ID, h.Method) })
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("read stdin: %w", err)
			}
			break
		}
	}
	stopListening()
	done := make(chan struct{})
	go func() { inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(bridgeFlushTimeout):
		cancelRequests()
		<-done
		return ErrFlushTimeout
	}
	listens.Wait()
	b.endSession()
	return nil
}

// headers sets what every request carries, and what its protocol
// generation asks for: a 2026-07-28 message states its version (from its
// _meta) and method in headers; a legacy one its session and version.
func (b *httpBridge) headers(req *http.Request, body []byte, method string) {
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		var m struct {
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		var p struct {
			Meta *mcp.Meta `json:"_meta"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if v := p.Meta.ProtocolVersion(); mcp.IsModernProtocol(v) {
			req.Header.Set(mcp.HeaderProtocolVersion, v)
			for k, val := range mcp.StandardHeaders(v, mcp.MCPMethod(method), m.Params) {
				req.Header.Set(k, val)
			}
			return
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessionID != "" {
		req.Header.Set(mcp.HeaderSessionID, b.sessionID)
	}
	if b.version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, b.version)
	}
}

// post sends one message and copies the answer to stdout. A request that
// gets no JSON-RPC answer (an HTTP error) is answered with a JSON-RPC
// error naming the status, so the client does not wait forever.
func (b *httpBridge) post(ctx context.Context, line, id json.RawMessage, method string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(line))
	if err != nil {
		b.fail(id, err.Error())
		return
	}
	b.headers(req, line, method)
	resp, err := b.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			b.fail(id, fmt.Sprintf("POST %s: %v", b.url, err))
		}
		return
	}
	defer resp.Body.Close()
	if method == string(mcp.MethodInitialize) {
		b.mu.Lock()
		if sid := resp.Header.Get(mcp.HeaderSessionID); sid != "" {
			b.sessionID = sid
		}
		b.mu.Unlock()
	}
	if resp.StatusCode == http.StatusAccepted {
		return
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		b.copySSE(resp.Body, method == string(mcp.MethodInitialize))
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, bridgeMaxLine))
		if err != nil {
			b.fail(id, fmt.Sprintf("read the answer: %v", err))
			return
		}
		b.emit(body, method == string(mcp.MethodInitialize))
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		msg := fmt.Sprintf("the gateway answered HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		if resp.StatusCode == http.StatusUnauthorized {
			b.said401.Do(func() {
				fmt.Fprintln(b.errw, "mcp-bridge: the gateway refused SWITCHBOARD_MCP_TOKEN (unknown, expired or revoked: a turn's token ends with the turn)")
			})
		}
		b.fail(id, msg)
	}
}

// emit writes one message to stdout as a line; for an initialize answer it
// first records the negotiated protocol version.
func (b *httpBridge) emit(msg []byte, initialize bool) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return
	}
	if initialize {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &r) == nil && r.Result.ProtocolVersion != "" {
			b.mu.Lock()
			b.version = r.Result.ProtocolVersion
			b.mu.Unlock()
		}
	}
	b.outMu.Lock()
	defer b.outMu.Unlock()
	_, _ = b.out.Write(append(msg, '\n'))
}

// copySSE writes the data of each event of an SSE stream as a line.
func (b *httpBridge) copySSE(r io.Reader, initialize bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), bridgeMaxLine)
	var data []byte
	for sc.Scan() {
		l := sc.Bytes()
		switch {
		case len(l) == 0:
			b.emit(data, initialize)
			data = data[:0]
		case bytes.HasPrefix(l, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(l, []byte("data:")), []byte(" "))...)
		}
	}
	b.emit(data, initialize)
}

// fail answers request id (if it is one) with a JSON-RPC error.
func (b *httpBridge) fail(id json.RawMessage, msg string) {
	if len(id) == 0 || bytes.Equal(id, []byte("null")) {
		fmt.Fprintln(b.errw, "mcp-bridge:", msg)
		return
	}
	e, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": mcp.INTERNAL_ERROR, "message": msg}})
	b.emit(e, false)
}

// startGET opens the legacy session's GET stream, once, after initialize.
func (b *httpBridge) startGET(ctx context.Context, wg *sync.WaitGroup) {
	b.mu.Lock()
	if b.sessionID == "" || b.getStream {
		b.mu.Unlock()
		return
	}
	b.getStream = true
	b.mu.Unlock()
	wg.Go(func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
		if err != nil {
			return
		}
		b.headers(req, nil, "")
		resp, err := b.hc.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			b.copySSE(resp.Body, false)
		}
	})
}

// endSession deletes a legacy session at the end.
func (b *httpBridge) endSession() {
	b.mu.Lock()
	sid := b.sessionID
	b.mu.Unlock()
	if sid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.url, nil)
	if err != nil {
		return
	}
	b.headers(req, nil, "")
	if resp, err := b.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}
