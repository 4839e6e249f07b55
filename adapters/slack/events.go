package slack

import (
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

// runEvents serves the Events API on opt.Listen until ctx is cancelled.
func (a *Adapter) runEvents(ctx context.Context, host adapters.Host) error {
	ln, err := net.Listen("tcp", a.opt.Listen)
	if err != nil {
		return fmt.Errorf("adapters.slack.listen: %w", err)
	}
	a.mu.Lock()
	a.addr = ln.Addr()
	a.mu.Unlock()
	mux := http.NewServeMux()
	mux.Handle("POST "+EventsPath, a.eventsHandler(host))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
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
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		sv, err := slack.NewSecretsVerifier(r.Header, a.opt.SigningSecret)
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil {
			a.log.Warn("slack event refused: bad or stale signature", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
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
		status := a.deliverCallback(r.Context(), host, ev, r.Header.Get("X-Slack-Retry-Num"))
		w.WriteHeader(status)
	})
}

func (a *Adapter) deliverCallback(ctx context.Context, host adapters.Host, ev slackevents.EventsAPIEvent, retry string) int {
	cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok || cb.EventID == "" {
		return http.StatusOK
	}
	key := "event:" + cb.EventID
	if _, seen, err := host.Value(ctx, key); err != nil {
		a.log.Warn("slack event dedupe lookup", "event_id", cb.EventID, "err", err)
		return http.StatusInternalServerError
	} else if seen {
		a.log.Debug("slack event already stored", "event_id", cb.EventID, "retry", retry)
		return http.StatusOK
	}
	if err := a.handle(ctx, host, ev); err != nil {
		if !errors.Is(err, adapters.ErrBadMessage) {
			a.log.Warn("slack event not stored; Slack will retry", "event_id", cb.EventID, "err", err)
			return http.StatusInternalServerError
		}
		a.log.Warn("slack event dropped as invalid", "event_id", cb.EventID, "err", err)
	}
	if err := host.SetValue(ctx, key, "1", seenTTL); err != nil {
		a.log.Warn("slack event dedupe record", "event_id", cb.EventID, "err", err)
	}
	return http.StatusOK
}
