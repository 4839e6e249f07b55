// Package discord is the Discord adapter (platform "discord"), built on
// github.com/bwmarrin/discordgo: the gateway websocket for events, REST for
// everything the bot does. discordgo's own reconnect, resume and rate-limit
// handling run underneath; this package supervises them (connection state,
// backfill after a session that could not resume) rather than repeating them.
//
// Chats: a guild channel is discord:<guild id>/<channel id>, a DM
// discord:dm/<channel id>. A thread or forum post carries its parent
// channel's JID and the thread's id as the topic, so a route for a channel
// covers its threads. Senders are discord:user/<id>.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"switchboard/adapters"
)

const platform = "discord"

// Intents the bot asks for. Message content is privileged: it must also be
// enabled for the application in the developer portal.
const intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages |
	discordgo.IntentsMessageContent | discordgo.IntentsGuildMessageReactions | discordgo.IntentsDirectMessageReactions

// Options configure an Adapter.
type Options struct {
	Token  string // the bot token ("Bot " is added)
	APIURL string // replaces https://discord.com (REST under /api/v9, the gateway URL from /api/v9/gateway)
	Logger *slog.Logger
	// ReconnectDeadline bounds how long discordgo may try to restore a lost
	// gateway connection before Run gives up on the session and returns, so
	// the gateway starts a fresh one. Default 2m.
	ReconnectDeadline time.Duration
}

// Adapter is the Discord adapter. Create it with New.
type Adapter struct {
	opt  Options
	log  *slog.Logger
	http *http.Client
	held adapters.Hold // a 429 pauses every REST request of the adapter (ratelimit.go)
	// badURL is Options.APIURL's fault, if any: Run returns it rather
	// than send the token to discord.com.
	badURL error

	mu       sync.Mutex
	s        *discordgo.Session
	host     adapters.Host
	parents  map[string]parent // thread id -> its parent channel
	homes    map[string]string // channel id (not a thread) -> its guild, "" for a DM (address)
	botRoles map[string]bool   // the bot's managed role ids

	selfID       atomic.Value // string
	selfName     atomic.Value // string: the bot's username as a mention renders (mentionWord)
	contentWarn  sync.Once    // the Message Content intent hint
	connectedCnt atomic.Int64
}

// parent is a thread's parent channel and guild.
type parent struct{ guild, channel string }

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
	_ adapters.Typer          = (*Adapter)(nil)
)

// New returns an adapter; nothing connects until Run.
func New(o Options) *Adapter {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReconnectDeadline <= 0 {
		o.ReconnectDeadline = 2 * time.Minute
	}
	a := &Adapter{opt: o, log: o.Logger.With("adapter", platform), parents: map[string]parent{}, homes: map[string]string{}, botRoles: map[string]bool{}}
	a.held.Log = a.log
	var next http.RoundTripper = http.DefaultTransport
	if o.APIURL != "" {
		base, err := url.Parse(strings.TrimRight(o.APIURL, "/"))
		switch {
		case err != nil:
			a.badURL = fmt.Errorf("%w: adapters.discord.api_url: %q: %v", adapters.ErrConfig, o.APIURL, err)
		case base.Scheme != "http" && base.Scheme != "https" || base.Host == "":
			a.badURL = fmt.Errorf("%w: adapters.discord.api_url: %q is not an http(s) URL; want the base that replaces Discord's, e.g. http://host:port",
				adapters.ErrConfig, o.APIURL)
		default:
			next = rewrite{base: base, next: next}
		}
	}
	a.http = &http.Client{Timeout: time.Minute, Transport: holding{next: next, hold: &a.held}}
	a.selfID.Store("")
	a.selfName.Store("")
	return a
}

// rewrite sends requests for https://discord.com to another base URL:
// discordgo computes its endpoints at package init.
type rewrite struct {
	base *url.URL
	next http.RoundTripper
}

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == "discord.com" || req.URL.Host == "discordapp.com" {
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host = r.base.Scheme, r.base.Host
		req.URL.Path = strings.TrimRight(r.base.Path, "/") + req.URL.Path
		req.Host = r.base.Host
	}
	return r.next.RoundTrip(req)
}

// Name is "discord".
func (a *Adapter) Name() string { return platform }

// Self is discord:user/<bot id> once connected.
func (a *Adapter) Self() (adapters.JID, bool) {
	id, _ := a.selfID.Load().(string)
	if id == "" {
		return "", false
	}
	return userJID(id), true
}

// MentionsSelf: word is a mention of the bot as render leaves it:
// "@<username>" (mentionWord), its managed role's "<@&id>", or the raw
// "<@id>"; known once the token was checked (users/@me).
func (a *Adapter) MentionsSelf(word string) (self, known bool) {
	id, _ := a.selfID.Load().(string)
	if id == "" {
		return false, false
	}
	name, _ := a.selfName.Load().(string)
	if name != "" && strings.EqualFold(word, "@"+name) || word == "<@"+id+">" || word == "<@!"+id+">" {
		return true, true
	}
	if !strings.HasPrefix(word, "<@&") || !strings.HasSuffix(word, ">") {
		return false, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botRoles[word[3:len(word)-1]], true
}

// maxText is the longest message content Discord takes, in characters.
const maxText = 2000

// Limits: 2,000 characters; Discord renders Markdown itself; typing lasts 10 s.
func (a *Adapter) Limits() adapters.Limits {
	return adapters.Limits{MaxText: maxText, Format: adapters.FormatMarkdown, TypingEvery: 8 * time.Second}
}

// Run checks the token, opens the gateway and serves events until ctx ends.
// discordgo reconnects and resumes on its own; a session that had to start
// afresh (READY rather than RESUMED) is followed by a backfill.
func (a *Adapter) Run(ctx context.Context, host adapters.Host) error {
	host.SetState(adapters.StateConnecting, nil)
	a.held.Report(host)
	if a.badURL != nil {
		return a.badURL
	}
	s, err := discordgo.New("Bot " + a.opt.Token)
	if err != nil {
		return fmt.Errorf("discord: %w", err)
	}
	s.Client = a.http
	s.Identify.Intents = intents
	s.ShouldReconnectOnError = true
	s.ShouldRetryOnRateLimit = true
	s.MaxRestRetries = 3
	s.StateEnabled = true
	s.SyncEvents = true // one event at a time, in order: each is stored before the next
	me, err := s.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		var rest *discordgo.RESTError
		if errors.As(err, &rest) && rest.Response != nil && rest.Response.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%w: adapters.discord.token: %s refused the token (401); copy the bot token again from the developer portal (Bot → Reset Token)",
				adapters.ErrBadToken, a.server())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL is discord.com's, before the rewrite to api_url
		}
		return fmt.Errorf("discord: check token with %s: %w", a.server(), err)
	}
	a.selfName.Store(mentionWord(me.Username))
	a.selfID.Store(me.ID)
	a.mu.Lock()
	a.s, a.host = s, host
	a.mu.Unlock()
	stuck := make(chan struct{}, 1)
	a.handlers(ctx, s, host, stuck)
	if err := s.Open(); err != nil {
		return openError(err, a.server())
	}
	a.log.Info("discord connected", "bot", me.Username, "jid", userJID(me.ID))
	select {
	case <-ctx.Done():
		_ = s.Close()
		return nil
	case <-stuck:
		// discordgo's own reconnect did not get the session back (it can
		// give up on a session it just reopened): start afresh.
		_ = s.Close()
		return fmt.Errorf("discord: gateway connection not restored within %s; starting a new session", a.opt.ReconnectDeadline)
	}
}

// server names, for errors, the server the adapter's requests go to: the
// api_url, with its key, or Discord.
func (a *Adapter) server() string {
	if a.opt.APIURL != "" {
		return "the server at " + strings.TrimRight(a.opt.APIURL, "/") + " (adapters.discord.api_url)"
	}
	return "Discord"
}

// openError explains a gateway close that no retry can fix: Discord closes
// with 4014 when the bot asks for a privileged intent (Message Content) that
// the application has not enabled, and with 4013 for intents it does not
// know. Both are configuration errors, so a start-up stops with the fix
// instead of reconnecting forever. server names where the gateway URL came
// from (Adapter.server).
func openError(err error, server string) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case closeDisallowedIntents:
			return fmt.Errorf("%w: adapters.discord: Discord refused the gateway connection (close %d, %q): "+
				"the bot needs the Message Content intent; enable it in the Discord Developer Portal "+
				"(your application → Bot → Privileged Gateway Intents → Message Content Intent), save, then restart", adapters.ErrConfig, ce.Code, ce.Text)
		case closeInvalidIntents:
			return fmt.Errorf("%w: adapters.discord: Discord refused the gateway intents (close %d, %q)", adapters.ErrConfig, ce.Code, ce.Text)
		case closeAuthenticationFailed:
			return fmt.Errorf("%w: adapters.discord.token: the gateway of %s refused the token (close %d); copy the bot token again from the developer portal (Bot → Reset Token)",
				adapters.ErrBadToken, server, ce.Code)
		}
	}
	return fmt.Errorf("discord: open gateway: %w", err)
}

// Gateway close codes that no reconnect can fix
// (https://discord.com/developers/docs/topics/opcodes-and-status-codes).
const (
	closeAuthenticationFailed = 4004
	closeInvalidIntents       = 4013
	closeDisallowedIntents    = 4014
)

// session is the current Run's session.
func (a *Adapter) session() (*discordgo.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.s == nil {
		return nil, errors.New("discord: not connected yet")
	}
	return a.s, nil
}

func userJID(id string) adapters.JID { return adapters.JID(platform + ":user/" + id) }

// chatJID is the JID of a channel (threads: their parent's).
func chatJID(guild, channel string) adapters.JID {
	if guild == "" {
		return adapters.JID(platform + ":dm/" + channel)
	}
	return adapters.JID(platform + ":" + guild + "/" + channel)
}

// channelOf is the channel to address for a chat and topic: the thread when
// there is one, else the chat's channel.
func channelOf(chat adapters.JID, topic string) (string, error) {
	if chat.Platform() != platform {
		return "", fmt.Errorf("discord: %q is not a discord chat: %w", chat, adapters.ErrPermanent)
	}
	guild, ch, ok := strings.Cut(chat.Room(), "/")
	if !ok || !isID(guild) || !isID(ch) {
		return "", fmt.Errorf("discord: %q is not discord:<guild>/<channel> or discord:dm/<channel> (an id is letters, digits, _ and -, with no leading 0): %w", chat, adapters.ErrPermanent)
	}
	if topic != "" {
		if !isID(topic) {
			return "", fmt.Errorf("discord: topic %q is not a thread id (letters, digits, _ and -, with no leading 0): %w", topic, adapters.ErrPermanent)
		}
		return topic, nil
	}
	return ch, nil
}

// isID reports whether s can be a Discord id (a snowflake; a test server's
// may have letters): an id goes into the REST path as it is, and Discord
// decodes the path before it reads the id, so "%32%30%30" or "x/../200"
// would reach channel 200 under a JID, or a topic, that the gateway
// authorized as another chat, whose owner may be another group. For the
// same reason a number has no leading zero: Discord reads "0200" as the
// snowflake 200.
func isID(s string) bool {
	return s != "" && s[0] != '0' && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
}

// address is the channel to call for chat and topic, once Discord has
// confirmed that the JID names it: the chat's channel is in the chat's
// guild (a discord:dm/ chat: a DM channel), and a topic is a thread under
// that channel. Discord addresses a channel by its id alone, while the
// gateway authorizes a call by its chat JID (and topic): without this, a
// group owning discord:G/C could post into any channel the bot sees
// through a topic naming it, discord:G/<channel of another server> or
// discord:dm/<any channel>. What Discord said is kept; a failed lookup is
// unconfirmed's to settle (a 4xx: the call goes as the JID names it; a
// 429, 5xx or network error: the call's error, retried).
func (a *Adapter) address(ctx context.Context, s *discordgo.Session, chat adapters.JID, topic string) (string, error) {
	if _, err := channelOf(chat, topic); err != nil { // the JID's and the topic's ids
		return "", err
	}
	ch, _ := channelOf(chat, "")
	guild := guildOf(chat)
	home, thread, err := a.lookup(ctx, s, chat, ch)
	if err != nil {
		return a.unconfirmed(chat, topic, ch, err)
	}
	if thread.channel != "" || home != guild {
		return "", fmt.Errorf("discord: %s does not name channel %s: it is %s: %w", chat, ch, describePlace(home, thread), adapters.ErrPermanent)
	}
	if topic == "" {
		return ch, nil
	}
	home, thread, err = a.lookup(ctx, s, chat, topic)
	if err != nil {
		return a.unconfirmed(chat, topic, topic, err)
	}
	if thread != (parent{guild: guild, channel: ch}) {
		return "", fmt.Errorf("discord: topic %s is not a thread of %s: it is %s: %w", topic, chat, describePlace(home, thread), adapters.ErrPermanent)
	}
	return topic, nil
}

// lookup says where channel id is: a thread's parent (thread.channel set),
// else the guild of a channel ("" for a DM). It asks Discord once per
// channel (threads learned from events are known already).
func (a *Adapter) lookup(ctx context.Context, s *discordgo.Session, chat adapters.JID, id string) (home string, thread parent, err error) {
	a.mu.Lock()
	thread, isThread := a.parents[id]
	home, isHome := a.homes[id]
	a.mu.Unlock()
	if isThread || isHome {
		return home, thread, nil
	}
	c, err := s.Channel(id, discordgo.WithContext(ctx))
	if err != nil {
		return "", parent{}, classify(chat, err)
	}
	a.learnChannel(c)
	if c.IsThread() {
		return "", parent{guild: c.GuildID, channel: c.ParentID}, nil
	}
	return c.GuildID, parent{}, nil
}

// unconfirmed is address's answer when Discord refused to say where id
// is: a retryable refusal (a 429, a server error, the network) is the
// call's error, retried as the call would be. A lasting one (the channel
// is unknown, or hidden from the bot; a server that serves no channel
// lookups) leaves the channel as the JID names it: the call itself then
// fails the same way where Discord cannot show the channel to the bot,
// so nothing is reached that the lookup would have stopped, and a server
// without the lookup (a proxy, a test server) still gets its calls.
func (a *Adapter) unconfirmed(chat adapters.JID, topic, id string, err error) (string, error) {
	if !errors.Is(err, adapters.ErrPermanent) {
		return "", err
	}
	a.log.Debug("channel lookup refused; addressing the channel as the JID names it", "jid", chat, "channel", id, "err", err)
	return channelOf(chat, topic)
}

// describePlace says where a channel is, for address's errors.
func describePlace(home string, thread parent) string {
	switch {
	case thread.channel != "":
		return "a thread of " + string(chatJID(thread.guild, thread.channel))
	case home == "":
		return "a DM channel"
	}
	return "a channel of server " + home
}

func guildOf(chat adapters.JID) string {
	g, _, _ := strings.Cut(chat.Room(), "/")
	if g == "dm" {
		return ""
	}
	return g
}
