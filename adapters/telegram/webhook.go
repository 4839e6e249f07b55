package telegram

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"switchboard/adapters"
)

// defaultWebhookConns bounds the webhook listener's open connections
// (Telegram opens at most 40 at once unless setWebhook's max_connections
// says more, up to 100).
const defaultWebhookConns = 128

// allowedUpdates are the update kinds the bot asks for.
var allowedUpdates = []string{"message", "edited_message", "channel_post", "edited_channel_post", "message_reaction", "callback_query"}

// runWebhook registers the webhook with Telegram and serves it: each update
// is answered 200 only once stored; anything else makes Telegram send it
// again. Requests without the secret token are refused.
func (a *Adapter) runWebhook(ctx context.Context, b *bot.Bot, host adapters.Host) error {
	ln, err := net.Listen("tcp", a.opt.Listen)
	if err != nil {
		return fmt.Errorf("%w: adapters.telegram.listen: %v (is another program using it? change adapters.telegram.listen, and the address your proxy forwards webhook_url to)", adapters.ErrConfig, err)
	}
	if _, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: a.opt.WebhookURL, SecretToken: a.opt.Secret, AllowedUpdates: allowedUpdates}); err != nil {
		ln.Close()
		return fmt.Errorf("telegram: set webhook %s: %w", a.opt.WebhookURL, err)
	}
	// The endpoint faces the internet: as the Slack Events API's, it holds
	// at most webhookConns connections (more wait to be accepted), so that
	// connections nobody authenticated cannot take every file descriptor of
	// the gateway, and bounds headers, reads, writes and idle keep-alives.
	srv := &http.Server{Handler: a.webhookHandler(ctx, host), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10,
		ConnState: adapters.LimitConnState(a.connState)}
	limited := adapters.LimitListener(ln, cmp.Or(a.webhookConns, defaultWebhookConns))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(limited) }()
	a.log.Info("telegram webhook listening", "addr", ln.Addr().String(), "url", a.opt.WebhookURL)
	host.SetState(adapters.StateConnected, nil)
	select {
	case <-ctx.Done():
	case err := <-done:
		return fmt.Errorf("telegram: webhook server: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

func (a *Adapter) webhookHandler(ctx context.Context, host adapters.Host) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if subtle.ConstantTimeCompare([]byte(got), []byte(a.opt.Secret)) != 1 {
			http.Error(w, "bad secret token", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		var u models.Update
		if err := json.Unmarshal(body, &u); err != nil {
			http.Error(w, "not an update", http.StatusBadRequest)
			return
		}
		for _, ev := range a.normalize(r.Context(), host, &u) {
			if _, err := host.Deliver(r.Context(), ev); err != nil && !errors.Is(err, adapters.ErrBadMessage) {
				a.log.Warn("telegram update not stored; Telegram will send it again", "jid", ev.Chat, "msg_id", ev.ID, "err", err)
				http.Error(w, "not stored, try again", http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
}
