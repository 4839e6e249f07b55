package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"switchboard/adapters"
)

// EventsPath is where the Events API posts.
const EventsPath = "/slack/events"

// maxEventBody is the largest Events API request accepted (Slack's are a
// few kilobytes).
const maxEventBody = 1 << 20

// runEvents serves the Events API on opt.Listen until ctx is cancelled.
func (a *Adapter) runEvents(ctx context.Context, host adapters.Host) error {
	ln, err := net.Listen("tcp", a.opt.Listen)
	if err != nil {
		// At start this stops the gateway with the message, as the web
		// chat's and Telegram webhook's listen addresses do.
		return fmt.Errorf("%w: adapters.slack.listen: %w (is another program using it? change adapters.slack.listen)", adapters.ErrConfig, err)
	}
	a.mu.Lock()
	a.addr = ln.Addr()
	a.mu.Unlock()
	mux := http.NewServeMux()
	mux.Handle("POST "+EventsPath, a.eventsHandler(host))
	mux.Handle("POST "+InteractivityPath, a.interactivityHandler(host))
	// The endpoint faces the internet: a request must arrive whole within
	// the read timeout (a trickled body is cut off), idle keep-alives are
	// closed, and at most maxConns connections are open at once.
	read := cmp.Or(a.opt.EventsReadTimeout, 10*time.Second)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: read, ReadTimeout: read, WriteTimeout: read + 30*time.Second,
		IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10, ConnState: adapters.LimitConnState(a.connState),
		BaseContext: func(net.Listener) context.Context { return ctx }}
	limited := adapters.LimitListener(ln, cmp.Or(a.opt.EventsMaxConns, 128))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(limited) }()
	host.SetState(adapters.StateConnected, nil)
	a.log.Info("slack events api listening", "addr", ln.Addr().String(), "path", EventsPath)
	a.bg.Go(func() { a.runBackfill(ctx, host) })
	defer a.bg.Wait()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		return fmt.Errorf("slack events api: %w", err)
	}
}

// eventsHandler verifies, de-duplicates and delivers one Events API request;
// it answers 200 only once the event is stored (or is not one to store).
func (a *Adapter) eventsHandler(host adapters.Host) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.verified(w, r)
		if !ok {
			return
		}
		ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
		if ev.Type == slackevents.URLVerification {
			var ch slackevents.EventsAPIURLVerificationEvent
			if err := json.Unmarshal(body, &ch); err != nil {
				http.Error(w, "bad challenge", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, ch.Challenge)
			return
		}
		if err != nil {
			// Signed by Slack but not an event we know: nothing to store.
			a.log.Debug("slack event ignored", "type", ev.Type, "err", err)
			return
		}
		if err := a.deliverOnce(r.Context(), host, ev); err != nil {
			a.log.Warn("slack event not stored; Slack will retry", "retry", r.Header.Get("X-Slack-Retry-Num"), "err", err)
			http.Error(w, "not stored", http.StatusInternalServerError)
		}
	})
}

// deliverOnce delivers an event unless its event_id was stored before (Slack
// retries events; in Socket Mode too, when an acknowledgement is late). nil
// means acknowledge: stored, seen before, garbage, or not an event to keep.
func (a *Adapter) deliverOnce(ctx context.Context, host adapters.Host, ev slackevents.EventsAPIEvent) error {
	key := ""
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok && cb.EventID != "" {
		key = "event:" + cb.EventID
	}
	if key != "" {
		if _, seen, err := host.Value(ctx, key); err != nil {
			return fmt.Errorf("look up %s: %w", key, err)
		} else if seen {
			a.log.Debug("slack event already stored", "key", key)
			return nil
		}
	}
	if err := a.handle(ctx, host, ev); err != nil {
		if !errors.Is(err, adapters.ErrBadMessage) {
			return err
		}
		a.log.Warn("slack event dropped as invalid", "key", key, "err", err)
	}
	if key != "" {
		if err := host.SetValue(ctx, key, "1", seenTTL); err != nil {
			a.log.Warn("slack event dedupe record", "key", key, "err", err)
		}
	}
	return nil
}

// verified reads a request from Slack (an event or an interaction) and
// checks its signature with the signing secret; false: it was refused (413,
// 400, or 401 for a bad or stale signature) and answered.
func (a *Adapter) verified(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		a.log.Warn("slack request refused: body over the limit", "remote", r.RemoteAddr, "limit_bytes", maxEventBody)
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return nil, false
	}
	sv, err := slack.NewSecretsVerifier(r.Header, a.opt.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		a.log.Warn("slack request refused: bad or stale signature", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}
