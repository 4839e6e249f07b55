// Package web is the local web chat adapter (platform "web"): an HTTP server
// with a self-contained chat page, a small JSON API to post and read the
// messages of a room, and a server-sent event stream that pushes new messages
// and the drafts of live replies (live.go) to open pages. A room "lobby" is
// the chat JID "web:lobby" and a user "ann" is the sender JID
// "web:user/ann". Every message in a web room addresses the
// bot (like a DM), so inbound messages carry adapters.VerbMention.
//
// The adapter owns no storage: the gateway stores every message (the users'
// through deliver, the bot's after Send returned its id), the adapter reads
// them back through History and is told of new ones through Stored.
package web

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/adapters"
)

const (
	platform       = "web"
	defaultBotName = "switchboard"
	// shutdownGrace bounds how long Run waits for in-flight requests once
	// ctx is cancelled before it closes the remaining connections.
	shutdownGrace = 3 * time.Second
	// defaultMaxStreams bounds concurrent event-stream clients.
	defaultMaxStreams = 1000
	// defaultMaxConns bounds open connections (event streams included):
	// more wait to be accepted, so that a flood of idle connections cannot
	// take every file descriptor of the process (the store's, the sockets',
	// the other adapters').
	defaultMaxConns = 4096
)

// History reads stored messages back; the gateway's store implements it.
type History interface {
	// Messages returns stored messages of chat with seq > after, ascending,
	// at most limit (user and bot messages alike).
	Messages(ctx context.Context, chat adapters.JID, after int64, limit int) ([]adapters.Stored, error)
}

// Options configures an Adapter.
type Options struct {
	Listen  string // address to listen on, e.g. "127.0.0.1:8420"; ":0" picks a port
	BotName string // display name of the bot, default "switchboard"
	History History
	Logger  *slog.Logger
}

// Adapter is the web chat adapter. Create it with New; it serves HTTP while
// Run is running. Send and Stored may be called at any time, from any
// goroutine.
type Adapter struct {
	listen  string
	botName string
	history History
	log     *slog.Logger

	hub     hub
	streams chan struct{} // semaphore: one slot per open event stream
	// keepAlive is the interval of the comment lines that keep idle event
	// streams (and the proxies in front of them) open.
	keepAlive time.Duration
	// streamMaxAge ends an event stream after this long, so no connection
	// lives forever; the EventSource reconnects after its retry delay with
	// Last-Event-ID, so nothing is lost.
	streamMaxAge time.Duration
	// bodyDeadline bounds reading a POST body (and discarding its unread rest).
	bodyDeadline time.Duration
	// stallDeadline drops a client that takes none of a response's bytes
	// for this long (writeDeadline; tests shorten it).
	stallDeadline time.Duration
	// maxConns bounds open connections (defaultMaxConns; tests lower it).
	maxConns int
	// connState, when set, is told of connection state changes (tests).
	connState func(net.Conn, http.ConnState)

	running   atomic.Bool
	ready     chan struct{} // closed once listening
	readyOnce sync.Once
	stop      chan struct{} // closed when Run stops: ends event streams
	stopOnce  sync.Once
	addr      atomic.Value // string: the bound address
	loopback  atomic.Bool  // bound to a loopback address: check Host headers
	host      hostAddrs    // this machine's addresses: posts from them are FromHost
	buttons   buttonStore  // the buttons of messages sent with them
}

var (
	_ adapters.Adapter  = (*Adapter)(nil)
	_ adapters.Identity = (*Adapter)(nil)
)

// botSender is the bot's own sender in every room; no user may post as it.
const botSender = "switchboard"

// Self is the bot's sender JID, web:user/switchboard: the gateway stores the
// bot's messages under it.
func (a *Adapter) Self() (adapters.JID, bool) { return senderJID(botSender), true }

var _ adapters.Watcher = (*Adapter)(nil)

// New returns an adapter configured by o. It does not listen until Run.
func New(o Options) *Adapter {
	a := &Adapter{
		listen:        o.Listen,
		botName:       o.BotName,
		history:       o.History,
		log:           o.Logger,
		streams:       make(chan struct{}, defaultMaxStreams),
		keepAlive:     15 * time.Second,
		streamMaxAge:  30 * time.Minute,
		bodyDeadline:  bodyDeadline,
		stallDeadline: writeDeadline,
		maxConns:      defaultMaxConns,
		ready:         make(chan struct{}),
		stop:          make(chan struct{}),
	}
	if a.botName == "" {
		a.botName = defaultBotName
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("adapter", platform)
	a.hub.rooms = make(map[adapters.JID]map[*subscriber]struct{})
	a.hub.drafts = make(map[adapters.JID]map[string]draftView)
	a.addr.Store("")
	return a
}

// Name is the platform name used in JIDs: "web".
func (a *Adapter) Name() string { return platform }

// Addr returns the address the server is bound to ("127.0.0.1:8420"), or ""
// before Run is listening. Useful with a ":0" listen address.
func (a *Adapter) Addr() string { return a.addr.Load().(string) }

// Ready returns a channel closed once Run is listening, so Addr is set. It
// stays open if Run fails to listen: wait for Run's result too.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// Run listens on the configured address and serves the chat page and API,
// calling host.Deliver for every posted message, until ctx is cancelled; then it
// ends the event streams, shuts the server down with a short deadline and
// returns nil. It returns an error if it cannot listen (the address is in
// use) or the server fails. An Adapter runs once.
func (a *Adapter) Run(ctx context.Context, host adapters.Host) error {
	if host == nil {
		return errors.New("web: run: nil host")
	}
	deliver := host.Deliver
	if a.history == nil {
		return errors.New("web: run: no history configured")
	}
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("web: run: adapter already ran")
	}
	defer a.stopOnce.Do(func() { close(a.stop) })

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", a.listen)
	if err != nil {
		if ctx.Err() != nil {
			return nil // cancelled before we were up
		}
		return fmt.Errorf("%w: adapters.web.listen: listen on %q: %w (is another program using it? change adapters.web.listen in the config)", adapters.ErrConfig, a.listen, err)
	}
	bound := ln.Addr().String()
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		a.loopback.Store(tcp.IP.IsLoopback())
	}
	a.addr.Store(bound)
	a.buttons.setHost(host)
	if !a.loopback.Load() {
		a.log.Warn("web chat listens off loopback: it has no authentication, so anyone who reaches it can post under any name and read every room; keep adapters.web.listen on 127.0.0.1 or put an authenticating proxy in front", "addr", bound)
	}
	a.readyOnce.Do(func() { close(a.ready) })
	a.log.Info("web chat listening", "addr", bound, "url", "http://"+bound+"/")
	host.SetState(adapters.StateConnected, nil)

	srv := &http.Server{
		Handler:           a.handler(deliver),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ConnState:         adapters.LimitConnState(a.connState),
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(adapters.LimitListener(ln, a.maxConns)) }()

	select {
	case err := <-served:
		return fmt.Errorf("web: serve on %s: %w", bound, err)
	case <-ctx.Done():
	}
	// Event streams never go idle on their own: end them first so that
	// Shutdown only waits for ordinary requests.
	a.stopOnce.Do(func() { close(a.stop) })
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		a.log.Warn("web chat shutdown forced", "err", err)
		_ = srv.Close() // the deadline passed: drop what is left
	}
	<-served // http.ErrServerClosed
	return nil
}

// roomOf returns the room of a web chat JID, or an error if chat is not one.
func roomOf(chat adapters.JID) (string, error) {
	if chat.Platform() != platform {
		return "", errors.New("not a web chat (want web:<room>)")
	}
	room := chat.Room()
	if err := checkRoom(room); err != nil {
		return "", err
	}
	return room, nil
}

// chatJID is the chat JID of a (valid) room.
func chatJID(room string) adapters.JID { return adapters.JID(platform + ":" + room) }

// senderJID is the sender JID of a (valid) web user name.
func senderJID(name string) adapters.JID { return adapters.JID(platform + ":user/" + name) }

// timedID returns now in Unix milliseconds (12 hex digits) followed by
// randomID: the ids of messages posted later sort after those posted
// before, as Slack's ts and Discord's snowflakes do, so that the store adds
// a room's new ids at the end of its index on (chat, id), not at a random
// page of it (with random ids that was an eighth of a group commit's
// writer time, store BenchmarkEnqueueMessages's workload with them).
func timedID(now time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(now.UnixMilli()))
	return hex.EncodeToString(b[2:]) + randomID()
}

// randomID returns 16 random hex digits.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
