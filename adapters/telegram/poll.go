package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot/models"

	"switchboard/adapters"
)

// gate is the SDK's HTTP client. It holds each getUpdates request — which
// confirms the previous batch to Telegram — until every update of the
// previous batch was handled (stored), and reports the poller's health.
type gate struct {
	client *http.Client
	host   adapters.Host
	log    *slog.Logger
	// hold is the adapter's 429 hold: a getUpdates answered 429 sets it
	// for its retry_after, as a send's does, and no poll goes out while
	// it lasts (the SDK would poll again within 100 ms).
	hold *adapters.Hold

	ready   chan struct{} // holds a token while no update is outstanding
	mu      sync.Mutex
	pending int
	down    bool
}

func (g *gate) Do(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/getUpdates") {
		return g.client.Do(req)
	}
	select {
	case <-g.ready:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	if err := g.waitHold(req.Context()); err != nil {
		g.ready <- struct{}{}
		return nil, err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		g.ready <- struct{}{}
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		g.ready <- struct{}{}
		return nil, err
	}
	if resp.StatusCode == http.StatusTooManyRequests && g.hold != nil {
		var r struct {
			Parameters struct {
				RetryAfter int `json:"retry_after"`
			} `json:"parameters"`
		}
		_ = json.Unmarshal(body, &r) // none said: Set holds a second
		g.hold.Set(time.Duration(r.Parameters.RetryAfter) * time.Second)
	}
	body, n, err := g.sanitize(resp.StatusCode, body)
	if err != nil {
		g.ready <- struct{}{}
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	g.mu.Lock()
	g.pending = n
	wasDown := g.down
	if resp.StatusCode == http.StatusOK {
		g.down = false
	}
	g.mu.Unlock()
	if wasDown && resp.StatusCode == http.StatusOK {
		g.host.SetState(adapters.StateConnected, nil)
		g.log.Info("telegram polling again")
	}
	if n == 0 {
		g.ready <- struct{}{}
	}
	return resp, nil
}

// waitHold waits until the adapter's 429 hold is over, or ctx ends.
func (g *gate) waitHold(ctx context.Context) error {
	if g.hold == nil {
		return nil
	}
	return g.hold.Wait(ctx)
}

// handled marks one update of the batch stored; the last one opens the gate.
func (g *gate) handled() {
	g.mu.Lock()
	g.pending--
	open := g.pending == 0
	g.mu.Unlock()
	if open {
		g.ready <- struct{}{}
	}
}

// failed is the SDK's error handler: a failed poll means the connection is
// down until the next poll succeeds (the SDK retries with its own backoff).
func (g *gate) failed(err error) {
	g.mu.Lock()
	first := !g.down
	g.down = true
	g.mu.Unlock()
	if first {
		g.log.Warn("telegram polling failed; retrying", "err", err)
	}
	g.host.SetState(adapters.StateBackingOff, err)
}

// sanitize decodes a getUpdates answer's batch one update at a time, the
// way the SDK will decode it whole, and returns the body to hand the SDK
// and how many updates it holds. The SDK fails a whole batch that holds
// one update it cannot decode (and the gate would wait for it forever) and
// panics on a null one, so such an update is logged and handed on as its
// bare update_id: the handler skips it and the offset moves past it. An
// item without a usable update_id cannot be confirmed by offset; it is
// dropped, and a batch of nothing else is a failed poll (the SDK backs
// off). Error answers pass through unchanged with no updates.
func (g *gate) sanitize(status int, body []byte) ([]byte, int, error) {
	var r struct {
		OK     bool              `json:"ok"`
		Result []json.RawMessage `json:"result"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &r) != nil || !r.OK {
		return body, 0, nil
	}
	kept := make([]json.RawMessage, 0, len(r.Result))
	for i, raw := range r.Result {
		var u models.Update
		err := json.Unmarshal(raw, &u)
		if err == nil && u.ID > 0 {
			kept = append(kept, raw)
			continue
		}
		var idOnly struct {
			ID int64 `json:"update_id"`
		}
		if json.Unmarshal(raw, &idOnly) != nil || idOnly.ID <= 0 {
			g.log.Warn("telegram update without an update_id; dropped", "index", i, "update", snippet(raw))
			continue
		}
		g.log.Warn("telegram update could not be decoded; skipped", "update", idOnly.ID, "err", err, "update_json", snippet(raw))
		kept = append(kept, json.RawMessage(`{"update_id":`+strconv.FormatInt(idOnly.ID, 10)+`}`))
	}
	if len(kept) == 0 && len(r.Result) > 0 {
		return nil, 0, fmt.Errorf("telegram: getUpdates answered %d updates, none with an update_id", len(r.Result))
	}
	out, err := json.Marshal(map[string]any{"ok": true, "result": kept})
	if err != nil {
		return nil, 0, fmt.Errorf("telegram: re-encode updates: %w", err)
	}
	return out, len(kept), nil
}

// snippet is the start of a raw update, for a log line.
func snippet(raw []byte) string {
	const max = 200
	if len(raw) > max {
		return strings.ToValidUTF8(string(raw[:max]), "") + "…"
	}
	return string(raw)
}
