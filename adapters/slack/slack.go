// Package slack is the Slack adapter: it receives events through Socket Mode
// (default) or the Events API over HTTP (signature-checked), normalizes them
// into adapters.Inbound (slack:<team>/channel|dm|group/<id> chats, thread_ts
// as the topic, Slack markup rendered readably), acknowledges an event only
// after the gateway stored it, backfills routed chats after downtime, and
// implements the messaging verbs over the Web API (github.com/slack-go/slack).
//
// A group DM (Slack's mpim) is a `group`: several people talk there, so the
// bot answers when mentioned, as in a private channel; only a one-to-one DM
// (im) is a `dm`, where every message is a mention.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

// Modes of receiving events.
const (
	ModeSocket = "socket"
	ModeEvents = "events"
)

// MaxText is the longest part sent: Slack shows up to 4,000 characters of a
// message's text comfortably and truncates at 40,000; the mrkdwn rendering
// of 4,000 UTF-16 units of Markdown stays far below the hard limit even when
// links expand.
const MaxText = 4000

// seenTTL is how long an Events API event id is remembered: Slack retries a
// failed delivery three times within about five minutes.
const seenTTL = 24 * time.Hour

// Options configure the adapter.
type Options struct {
	BotToken      string // xoxb-...: the Web API
	AppToken      string // xapp-...: Socket Mode only
	Mode          string // ModeSocket (default) or ModeEvents
	SigningSecret string // ModeEvents: verifies requests
	Listen        string // ModeEvents: host:port serving POST /slack/events
	APIURL        string // Web API base (a trailing slash is added when missing); "" for Slack's
	Logger        *slog.Logger
	// PostInterval paces chat.postMessage per channel after a burst of
	// five (0: Slack's one message per second).
	PostInterval time.Duration
	// PingInterval is how long Socket Mode waits for Slack's websocket
	// ping before it reconnects (0: slack-go's 30s).
	PingInterval time.Duration
	// EventsMaxConns caps the Events API listener's open connections;
	// more wait to be accepted (0: 128).
	EventsMaxConns int
	// EventsReadTimeout bounds reading one Events API request, headers and
	// body (0: 10s); an idle keep-alive connection is closed after 60s.
	EventsReadTimeout time.Duration
}

// Adapter is the Slack adapter.
type Adapter struct {
	opt Options
	api *slack.Client
	log *slog.Logger

	mu      sync.Mutex
	botUser string // the bot's user id (auth.test user_id)
	botName string // the bot's handle (auth.test user): one word, as a mention of the bot reads
	botID   string // the bot's bot id (B...)
	team    string
	teams   map[string]bool // the workspaces events came from, at most maxTeams
	grid    bool            // auth.test named an Enterprise Grid org: the bot may be in any of its workspaces
	ready   bool
	addr    net.Addr // events mode: the bound listener

	users cache // user id → display name
	chans cache // channel id → kind "|" name

	noStreams atomic.Bool // Slack refused chat.startStream to this app: live replies edit a message

	backfilling sync.Mutex
	bg          sync.WaitGroup // backfills in flight
	tiers       tiers

	connState func(net.Conn, http.ConnState) // tests: the Events API's connections
}

var (
	_ adapters.Adapter        = (*Adapter)(nil)
	_ adapters.Identity       = (*Adapter)(nil)
	_ adapters.Mentioner      = (*Adapter)(nil)
	_ adapters.Limiter        = (*Adapter)(nil)
	_ adapters.Editor         = (*Adapter)(nil)
	_ adapters.Deleter        = (*Adapter)(nil)
	_ adapters.Reactor        = (*Adapter)(nil)
	_ adapters.Pinner         = (*Adapter)(nil)
	_ adapters.FileSender     = (*Adapter)(nil)
	_ adapters.Downloader     = (*Adapter)(nil)
	_ adapters.HistoryFetcher = (*Adapter)(nil)
	_ adapters.Streamer       = (*Adapter)(nil)
)

// New returns a Slack adapter; it connects in Run.
func New(opt Options) *Adapter {
	if opt.Mode == "" {
		opt.Mode = ModeSocket
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	// slack-go appends method names to the base as it is.
	if opt.APIURL != "" && !strings.HasSuffix(opt.APIURL, "/") {
		opt.APIURL += "/"
	}
	a := &Adapter{opt: opt, log: opt.Logger.With("adapter", "slack"), tiers: tiers{postEvery: opt.PostInterval}}
	a.tiers.held.Log = a.log
	opts := []slack.Option{slack.OptionHTTPClient(&http.Client{Transport: holding{base: http.DefaultTransport, tiers: &a.tiers}})}
	if opt.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(opt.APIURL))
	}
	if opt.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(opt.AppToken))
	}
	a.api = slack.New(opt.BotToken, opts...)
	return a
}

// Name is "slack".
func (a *Adapter) Name() string { return "slack" }

// Self is the bot's sender JID, known after auth.test.
func (a *Adapter) Self() (adapters.JID, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.ready {
		return "", false
	}
	return userJID(a.team, a.botUser), true
}

// MentionsSelf: word is "@<bot handle>", as render shows a mention of the
// bot; known once auth.test answered.
func (a *Adapter) MentionsSelf(word string) (self, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.ready || a.botName == "" {
		return false, false // render shows the bot's mention by its label or display name
	}
	return strings.EqualFold(word, "@"+a.botName), true
}

// Limits: 4,000 units of Markdown per message, rendered to mrkdwn.
func (a *Adapter) Limits() adapters.Limits {
	return adapters.Limits{MaxText: MaxText, Format: adapters.FormatMrkdwn, Measure: measure}
}

// measure is a part's length as sent: its mrkdwn rendering or its escaped
// plain fallback, whichever is longer.
func measure(src string) int {
	return max(adapters.UTF16Len(markdown.SlackMrkdwn(src)), adapters.UTF16Len(markdown.SlackPlain(src)))
}

// Addr is the bound address of the Events API listener (nil before Run
// listens or in socket mode).
func (a *Adapter) Addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addr
}

func (a *Adapter) identity() (team, user, bot string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.team, a.botUser, a.botID
}

// Run authenticates the bot token, then receives events in the configured
// mode until ctx is cancelled.
func (a *Adapter) Run(ctx context.Context, host adapters.Host) error {
	host.SetState(adapters.StateConnecting, nil)
	a.tiers.held.Report(host)
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		err := a.authenticate(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, adapters.ErrBadToken) {
			host.SetState(adapters.StateFailed, err)
			return err
		}
		// Slack unreachable or rate limited: not the operator's fault.
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) {
			asked, _ := adapters.RetryWait(rl.RetryAfter)
			wait = max(wait, asked)
		}
		host.SetState(adapters.StateBackingOff, err)
		a.log.Warn("slack auth.test failed; retrying", "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	if a.opt.Mode == ModeEvents {
		return a.runEvents(ctx, host)
	}
	return a.runSocket(ctx, host)
}

// authenticate calls auth.test with the bot token and records the identity.
func (a *Adapter) authenticate(ctx context.Context) error {
	res, err := a.api.AuthTestContext(ctx)
	if err != nil {
		if isAuthError(err) {
			return fmt.Errorf("adapters.slack.bot_token: %w: auth.test: %v", adapters.ErrBadToken, err)
		}
		return fmt.Errorf("slack auth.test: %w", err)
	}
	a.mu.Lock()
	a.botUser, a.botName, a.botID, a.team, a.ready = res.UserID, res.User, res.BotID, res.TeamID, true
	a.grid = res.EnterpriseID != ""
	a.mu.Unlock()
	a.log.Info("slack authenticated", "team", res.TeamID, "bot_user", res.UserID, "mode", a.opt.Mode)
	return nil
}

func isAuthError(err error) bool {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		err = se
	}
	switch err.Error() {
	case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "not_allowed_token_type":
		return true
	}
	return false
}

func userJID(team, user string) adapters.JID {
	return adapters.JID("slack:" + team + "/user/" + user)
}

func chatJID(team, kind, id string) adapters.JID {
	return adapters.JID("slack:" + team + "/" + kind + "/" + id)
}

// channelOf returns the Slack conversation id and kind of a chat JID.
func channelOf(chat adapters.JID) (id, kind string, err error) {
	parts := strings.Split(chat.Room(), "/")
	if chat.Platform() != "slack" || len(parts) != 3 || parts[2] == "" {
		return "", "", fmt.Errorf("%w: %s is not a slack:<team>/channel|dm|group/<id> chat", adapters.ErrPermanent, chat)
	}
	switch parts[1] {
	case "channel", "dm", "group":
	default:
		return "", "", fmt.Errorf("%w: %s: kind %q is not channel, dm or group", adapters.ErrPermanent, chat, parts[1])
	}
	return parts[2], parts[1], nil
}

// maxTeams bounds the workspaces an adapter remembers events from.
const maxTeams = 1024

// sawTeam notes a workspace an event came from: its chats' JIDs name it.
func (a *Adapter) sawTeam(team string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if team == "" || a.teams[team] || len(a.teams) >= maxTeams {
		return
	}
	if a.teams == nil {
		a.teams = map[string]bool{}
	}
	a.teams[team] = true
}

// channelIn is channelOf for a chat of a workspace the bot is in: the
// auth.test team, or one an event came from. Slack addresses a
// conversation by its id alone, while the gateway authorizes a call by its
// chat JID: without this a group owning a catch-all route for slack
// reached slack:T1/channel/C1, another group's chat, as
// slack:T9/channel/C1, a JID no route pinned. The check starts with the
// first event (until then the JIDs in use were written by the operator,
// not minted from the bot's workspace), and never applies when auth.test
// named no team or an Enterprise Grid org (whose workspaces the bot may be
// in before an event from each came).
func (a *Adapter) channelIn(chat adapters.JID) (id, kind string, err error) {
	id, kind, err = channelOf(chat)
	if err != nil {
		return "", "", err
	}
	team, _, _ := strings.Cut(chat.Room(), "/")
	a.mu.Lock()
	known := team == a.team || a.teams[team] || a.team == "" || a.grid || len(a.teams) == 0
	bot := a.team
	a.mu.Unlock()
	if !known {
		return "", "", fmt.Errorf("%w: %s is in workspace %s, which the bot is not in (its workspace is %s)", adapters.ErrPermanent, chat, team, bot)
	}
	return id, kind, nil
}

// address is channelOf once Slack has confirmed the JID's kind: a dm/ JID
// names a DM, a group/ JID a private channel or group DM, a channel/ JID a
// public channel. Slack addresses a conversation by its id alone, while the
// gateway authorizes a call by its chat JID: without this a group owning
// every slack:<team>/dm/* chat (a route for the bot's DMs) posted into any
// channel through slack:<team>/dm/<channel id>. The kind comes from the
// cache (events fill it), else conversations.info. A lookup Slack refuses
// for good (lookupRefused: channel_not_found, missing_scope, a 4xx) leaves
// the call as the JID names it; one that fails for now is the call's
// error, retried as a send's would be.
func (a *Adapter) address(ctx context.Context, verb string, chat adapters.JID) (id, kind string, err error) {
	id, kind, err = a.channelIn(chat)
	if err != nil {
		return "", "", err
	}
	actual, known := a.cachedKind(id)
	if !known {
		if err := a.tiers.wait(ctx, "conversations.info", ""); err != nil {
			return "", "", err
		}
		c, err := a.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: id})
		if lookupRefused(err) {
			// Slack (or a server without conversations.info: a proxy,
			// a test server) will not say what the conversation is: the
			// call goes out as the JID names it. It then fails the same
			// way where the bot cannot see the conversation; the check
			// stops only what Slack shows to be another kind.
			a.log.Debug("conversations.info refused; addressing the conversation as the JID names it", "jid", chat, "err", err)
			return id, kind, nil
		}
		if err != nil {
			return "", "", classify(verb, chat, err)
		}
		var name string
		actual, name = a.kindAndName(ctx, c)
		a.chans.put(id, actual+"|"+name)
	}
	if actual != kind {
		return "", "", fmt.Errorf("%w: slack %s %s: conversation %s is a %s, not a %s: its JID is %s", adapters.ErrPermanent, verb, chat, id,
			describeKind(actual), describeKind(kind), chatJID(strings.Split(chat.Room(), "/")[0], actual, id))
	}
	return id, kind, nil
}

// lookupRefused reports whether err is Slack's lasting refusal of a
// lookup (an error code such as channel_not_found or missing_scope, or a
// 4xx answer other than 429), not a failure that a retry may mend (a
// rate limit, a 5xx, the network, or an error code Slack gives for its
// own failure of the moment: transientCodes).
func lookupRefused(err error) bool {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return !slices.Contains(transientCodes, se.Err)
	}
	var sc slack.StatusCodeError
	return errors.As(err, &sc) && sc.Code >= 400 && sc.Code < 500 && sc.Code != 429
}

// transientCodes are the error codes of Slack's Web API that say the call
// failed on Slack's side for now (its documented "retry later" errors).
var transientCodes = []string{"internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited"}

// cachedKind is a conversation's kind as the cache has it.
func (a *Adapter) cachedKind(id string) (string, bool) {
	v, ok := a.chans.get(id)
	if !ok {
		return "", false
	}
	kind, _, _ := strings.Cut(v, "|")
	return kind, kind != ""
}

func describeKind(kind string) string {
	switch kind {
	case "dm":
		return "DM"
	case "group":
		return "private channel or group DM"
	}
	return "public channel"
}

// kindOf maps an event's channel_type to the JID kind.
func kindOf(channelType string) string {
	switch channelType {
	case "im":
		return "dm"
	case "group", "mpim":
		return "group"
	case "channel":
		return "channel"
	}
	return ""
}

// cache is a small map of names with an expiry, bounded by clearing.
type cache struct {
	mu sync.Mutex
	m  map[string]cached
}

type cached struct {
	v     string
	until time.Time
}

const cacheTTL = time.Hour

func (c *cache) get(k string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || time.Now().After(e.until) {
		return "", false
	}
	return e.v, true
}

func (c *cache) put(k, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) > 10_000 {
		c.m = map[string]cached{}
	}
	c.m[k] = cached{v: v, until: time.Now().Add(cacheTTL)}
}
