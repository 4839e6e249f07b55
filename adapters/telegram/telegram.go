// Package telegram is the Telegram adapter (platform "telegram"), built on
// github.com/go-telegram/bot with long polling.
//
// Chats: a private chat is telegram:user/<user id>; a group, supergroup or
// channel is telegram:group/<absolute chat id> (the minus sign is restored
// when sending). Forum topics travel as the message's topic
// (message_thread_id). Senders are telegram:user/<id>; a message written as
// a chat (a channel post, an anonymous admin) is sent by telegram:group/<id>.
//
// Nothing is lost across restarts: the SDK's poller is gated so that it asks
// for the next batch of updates — which confirms the previous one to
// Telegram — only after every update of the batch was stored, and the last
// stored update id is persisted through the Host and restored at start.
// The gate also decodes each batch before the SDK does, so that one update
// the SDK cannot decode (or a null) is skipped instead of failing the batch
// or panicking the poller.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

const platform = "telegram"

// Options configure an Adapter.
type Options struct {
	Token  string // the bot token from BotFather
	APIURL string // Bot API base, default https://api.telegram.org (requests go to /bot<token>/<method>)
	Logger *slog.Logger
	// PollTimeout is the long-poll duration of getUpdates. Default 50s.
	PollTimeout time.Duration
	// PerChat and PerGroup are the least time between two messages the bot
	// sends to one private chat and to one group (Telegram allows about one
	// a second per chat and twenty a minute per group); Global bounds all
	// chats together (about thirty a second). Zero keeps the defaults; a
	// negative value turns the pacing off (tests).
	PerChat, PerGroup, Global time.Duration
	// WebhookURL, when set, switches from long polling to a webhook:
	// Telegram posts updates to this public HTTPS URL, which must reach
	// Listen; Secret is the secret token it sends along.
	WebhookURL string
	Listen     string
	Secret     string
}

// Adapter is the Telegram adapter. Create it with New.
type Adapter struct {
	opt  Options
	log  *slog.Logger
	http *http.Client

	mu    sync.Mutex
	bot   *bot.Bot // the current Run's client; nil before the first connect
	host  adapters.Host
	alias map[int64]int64 // new (supergroup) chat id -> the old id whose JID it keeps
	moved map[int64]int64 // old chat id -> the supergroup it became

	selfID   atomic.Int64
	username atomic.Value // string, lowercase, without @
	pace     pacer
	warned   atomic.Bool // the privacy-mode hint was logged
	noDrafts atomic.Bool // Telegram refused a message draft: live replies edit a message

	// webhookConns bounds the webhook listener's open connections
	// (defaultWebhookConns; tests lower it); connState, when set, is told
	// of their state changes (tests).
	webhookConns int
	connState    func(net.Conn, http.ConnState)
}

var (
	_ adapters.Adapter    = (*Adapter)(nil)
	_ adapters.Identity   = (*Adapter)(nil)
	_ adapters.Mentioner  = (*Adapter)(nil)
	_ adapters.Limiter    = (*Adapter)(nil)
	_ adapters.Editor     = (*Adapter)(nil)
	_ adapters.Deleter    = (*Adapter)(nil)
	_ adapters.Reactor    = (*Adapter)(nil)
	_ adapters.Pinner     = (*Adapter)(nil)
	_ adapters.FileSender = (*Adapter)(nil)
	_ adapters.Downloader = (*Adapter)(nil)
	_ adapters.Typer      = (*Adapter)(nil)
)

// New returns an adapter; nothing connects until Run.
func New(o Options) *Adapter {
	if o.APIURL == "" {
		o.APIURL = "https://api.telegram.org"
	}
	o.APIURL = strings.TrimRight(o.APIURL, "/")
	if o.PollTimeout <= 0 {
		o.PollTimeout = 50 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Adapter{opt: o, log: o.Logger.With("adapter", platform),
		http:  &http.Client{Timeout: o.PollTimeout + 30*time.Second},
		alias: map[int64]int64{}, moved: map[int64]int64{}}
	a.username.Store("")
	a.pace = newPacer(o)
	a.pace.held.Log = a.log
	return a
}

// Name is "telegram".
func (a *Adapter) Name() string { return platform }

// Self is telegram:user/<bot id> once connected.
func (a *Adapter) Self() (adapters.JID, bool) {
	id := a.selfID.Load()
	if id == 0 {
		return "", false
	}
	return userJID(id), true
}

// MentionsSelf: word is "@<bot username>", in any case, as Telegram's
// clients write a mention of the bot; known once getMe answered.
func (a *Adapter) MentionsSelf(word string) (self, known bool) {
	name, _ := a.username.Load().(string)
	if name == "" {
		return false, false
	}
	return strings.EqualFold(word, "@"+name), true
}

// Limits: 4096 characters a message; the typing indicator lasts 5 s.
func (a *Adapter) Limits() adapters.Limits {
	return adapters.Limits{MaxText: 4096, Format: adapters.FormatHTML, TypingEvery: 4 * time.Second, Measure: measure}
}

// measure is a part's length as Telegram counts it (the text its HTML
// shows), or as its plain fallback, whichever is longer: a "message is too
// long" refusal is permanent, so neither may exceed the limit.
func measure(src string) int {
	return max(adapters.UTF16Len(markdown.HTMLText(markdown.TelegramHTML(src))), adapters.UTF16Len(markdown.Plain(src)))
}

// Run connects (getMe, deleteWebhook), then long-polls until ctx ends.
func (a *Adapter) Run(ctx context.Context, host adapters.Host) error {
	host.SetState(adapters.StateConnecting, nil)
	a.pace.held.Report(host)
	offset, err := a.restore(ctx, host)
	if err != nil {
		return err
	}
	g := &gate{client: a.http, host: host, log: a.log, hold: &a.pace.held, ready: make(chan struct{}, 1)}
	g.ready <- struct{}{}
	b, err := bot.New(a.opt.Token, bot.WithServerURL(a.opt.APIURL), bot.WithHTTPClient(a.opt.PollTimeout, g),
		bot.WithSkipGetMe(), bot.WithInitialOffset(offset), bot.WithWorkers(1), bot.WithNotAsyncHandlers(),
		bot.WithAllowedUpdates(allowedUpdates),
		bot.WithDefaultHandler(func(ctx context.Context, _ *bot.Bot, u *models.Update) { a.handle(ctx, host, g, u) }),
		bot.WithErrorsHandler(func(err error) { g.failed(err) }))
	if err != nil {
		return fmt.Errorf("%w: adapters.telegram.token: %v", adapters.ErrBadToken, err)
	}
	me, err := b.GetMe(ctx)
	if err != nil {
		if errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound) {
			return fmt.Errorf("%w: adapters.telegram.token: Telegram refused the token (%v); copy it again from @BotFather", adapters.ErrBadToken, err)
		}
		return fmt.Errorf("telegram: getMe: %w", err)
	}
	a.selfID.Store(me.ID)
	a.username.Store(strings.ToLower(me.Username))
	a.mu.Lock()
	a.bot, a.host = b, host
	a.mu.Unlock()
	if a.opt.WebhookURL != "" {
		a.log.Info("telegram connected", "bot", "@"+me.Username, "jid", userJID(me.ID), "mode", "webhook")
		return a.runWebhook(ctx, b, host)
	}
	// Polling gets nothing while a webhook is set (a stale one, say).
	if _, err := b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{}); err != nil {
		return fmt.Errorf("telegram: delete webhook: %w", err)
	}
	a.log.Info("telegram connected", "bot", "@"+me.Username, "jid", userJID(me.ID), "resume_after_update", offset)
	host.SetState(adapters.StateConnected, nil)
	b.Start(ctx)
	return nil
}

// restore reads the last stored update id and the supergroup migrations.
func (a *Adapter) restore(ctx context.Context, host adapters.Host) (int64, error) {
	v, ok, err := host.Value(ctx, "offset")
	if err != nil {
		return 0, fmt.Errorf("telegram: read update offset: %w", err)
	}
	var offset int64
	if ok {
		if offset, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, fmt.Errorf("telegram: stored update offset %q: %w", v, err)
		}
	}
	v, ok, err = host.Value(ctx, "migrations")
	if err != nil {
		return 0, fmt.Errorf("telegram: read group migrations: %w", err)
	}
	if ok {
		var moved map[int64]int64
		if err := json.Unmarshal([]byte(v), &moved); err != nil {
			return 0, fmt.Errorf("telegram: stored group migrations: %w", err)
		}
		a.mu.Lock()
		for from, to := range moved {
			a.moved[from], a.alias[to] = to, from
		}
		a.mu.Unlock()
	}
	return offset, nil
}

// client is the current Run's bot, for sending.
func (a *Adapter) client() (*bot.Bot, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bot == nil {
		return nil, errors.New("telegram: not connected yet")
	}
	return a.bot, nil
}

func userJID(id int64) adapters.JID {
	return adapters.JID(platform + ":user/" + strconv.FormatInt(id, 10))
}

// messageID mints the id of Telegram message id (a per-chat counter).
func messageID(id int) adapters.MessageID { return adapters.MessageID(strconv.Itoa(id)) }

// msgID mints the id of message id in Telegram chat (its own id, not the
// JID's): a supergroup that a group became keeps the group's JID but counts
// its message ids afresh, from 1, so they would meet the group's under the
// one JID (and the store keeps the first of two messages with one
// identity). Its ids are minted "s<id>", never one of the group's.
func (a *Adapter) msgID(chat int64, id int) adapters.MessageID {
	a.mu.Lock()
	_, migrated := a.alias[chat]
	a.mu.Unlock()
	if migrated {
		return adapters.MessageID("s" + strconv.Itoa(id))
	}
	return messageID(id)
}

// parseMsgID reads an id msgID minted for chat: the number only as
// Telegram writes it ("03" or "+3" would act on message 3 while the
// gateway looked up and authorized another id), after "s" in a supergroup
// a group became, and only there. A plain id there is the group's, from
// before the migration: Telegram reaches it no more, and its number is
// another message's in the supergroup. migrated tells that case apart.
func (a *Adapter) parseMsgID(chat int64, id adapters.MessageID) (n int, ok, migrated bool) {
	a.mu.Lock()
	_, migrated = a.alias[chat]
	a.mu.Unlock()
	s, super := strings.CutPrefix(string(id), "s")
	if super != migrated {
		return 0, false, migrated
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && strconv.Itoa(n) == s, migrated
}

func groupJID(id int64) adapters.JID {
	if id < 0 {
		id = -id
	}
	return adapters.JID(platform + ":group/" + strconv.FormatInt(id, 10))
}

// chatID turns a chat JID back into Telegram's chat id, following a group's
// migration to a supergroup.
func (a *Adapter) chatID(chat adapters.JID) (int64, error) {
	kind, id, ok := strings.Cut(chat.Room(), "/")
	n, err := strconv.ParseInt(id, 10, 64)
	// Only the id as Telegram writes it: "0123" or "+123" would reach chat
	// 123 under a JID the gateway authorized as another chat.
	if !ok || err != nil || n <= 0 || strconv.FormatInt(n, 10) != id || chat.Platform() != platform {
		return 0, fmt.Errorf("telegram: %q is not a telegram:user/<id> or telegram:group/<id> chat: %w", chat, adapters.ErrPermanent)
	}
	switch kind {
	case "user":
		return n, nil
	case "group":
		a.mu.Lock()
		defer a.mu.Unlock()
		if to, ok := a.moved[-n]; ok {
			return to, nil
		}
		// A supergroup that a group became keeps the group's JID: the
		// gateway routes and authorizes the chat by that JID alone, and
		// its own (telegram:group/100…) would reach the chat under a JID
		// that another route, another group's, may match.
		if from, ok := a.alias[-n]; ok {
			return 0, fmt.Errorf("telegram: %s is the supergroup that group %s became; the chat's JID stays %s: %w", chat, groupJID(from), groupJID(from), adapters.ErrPermanent)
		}
		return -n, nil
	}
	return 0, fmt.Errorf("telegram: %q: unknown chat kind %q: %w", chat, kind, adapters.ErrPermanent)
}
