package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

func (a *app) routeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "route",
		Short: "Manage the routing table (chat → group folder)",
		Long: `Routes map inbound messages to group folders. A route matches on any of
platform, room, chat_jid, sender, verb and topic (globs: * does not cross /,
** does). Routes are tried by ascending seq, then id; the first match wins.
mode trigger runs a turn; observe stores the message as context only.`,
	}
	var target, mode string
	var seq int
	add := &cobra.Command{
		Use:   "add --target FOLDER [--seq N] [--mode trigger|observe] KEY=GLOB...",
		Short: "Add a route",
		Example: `  switchboard route add --target main platform=web
  switchboard route add --target acme --seq -5 chat_jid=telegram:group/1001
  switchboard route add --target audit --mode observe 'platform=slack' 'room=T1/channel/*'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.routeAdd(cmd, routing.Route{Seq: seq, Target: groups.Folder(target), Mode: routing.Mode(mode)}, args)
		},
	}
	add.Flags().StringVar(&target, "target", "", "group folder that receives matching messages (required)")
	add.Flags().IntVar(&seq, "seq", 0, "order: lower seq is tried first (ties by id)")
	add.Flags().StringVar(&mode, "mode", "trigger", "trigger (run a turn) or observe (store as context)")
	var page routePage
	list := &cobra.Command{
		Use:   "list",
		Short: "List routes in the order they are tried",
		Long: `List routes in the order they are tried: by seq, then id.

A page holds --limit routes (at most 1000). When more follow, the last line
says how to get the next page: --after the ID of the page's last route (with
--json that line goes to stderr). --all lists every route at once.`,
		Example: `  switchboard route list
  switchboard route list --limit 1000 --after 5120
  switchboard route list --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.routeList(cmd, page) },
	}
	list.Flags().IntVar(&page.limit, "limit", 100, "how many routes a page (1 to 1000)")
	list.Flags().Int64Var(&page.after, "after", 0, "the page after this route (its ID; the last line of a page names it)")
	list.Flags().BoolVar(&page.all, "all", false, "list every route, not a page")
	rm := &cobra.Command{
		Use: "rm ID", Short: "Remove a route", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.routeRemove(cmd, args[0]) },
	}
	var sender, verb, topic string
	var show explainShow
	explain := &cobra.Command{
		Use:   "explain CHAT_JID [--sender S] [--verb V] [--topic T]",
		Short: "Show which route wins for a chat and why earlier routes did not match",
		Long: `Show which route wins for a message in CHAT_JID and why the routes tried
before it did not match. It lists those that could have matched this chat (up
to --limit of them) and counts the routes for other chats (a literal platform,
room or chat_jid naming something else) instead of listing them; --all lists
every route tried first.`,
		Example: `  switchboard route explain web:lobby
  switchboard route explain telegram:group/1001 --sender telegram:user/42 --verb mention`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.routeExplain(cmd, args[0], sender, verb, topic, show)
		},
	}
	explain.Flags().IntVar(&show.limit, "limit", 20, "list at most this many of the routes tried first")
	explain.Flags().BoolVar(&show.all, "all", false, "list every route tried first, those for other chats included")
	explain.Flags().StringVar(&sender, "sender", "", "sender JID, e.g. web:user/ann")
	explain.Flags().StringVar(&verb, "verb", string(adapters.VerbMessage), "message or mention")
	explain.Flags().StringVar(&topic, "topic", "", "thread or forum topic id")
	cmd.AddCommand(add, list, rm, explain)
	return cmd
}

// parseMatch turns KEY=GLOB arguments into a match map.
func parseMatch(args []string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, usagef("give at least one KEY=GLOB (KEY one of %s); for a catch-all write platform=*", strings.Join(routing.MatchKeys, ", "))
	}
	m := map[string]string{}
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return nil, usagef("match %q: want KEY=GLOB with KEY one of %s", arg, strings.Join(routing.MatchKeys, ", "))
		}
		if _, dup := m[k]; dup {
			return nil, usagef("match key %s given twice", k)
		}
		m[k] = v
	}
	if err := routing.ValidateNewMatch(m); err != nil {
		return nil, usageError{err: err}
	}
	return m, nil
}

func (a *app) routeAdd(cmd *cobra.Command, r routing.Route, args []string) error {
	if r.Target == "" {
		return usagef("--target is required")
	}
	m, err := parseMatch(args)
	if err != nil {
		return err
	}
	r.Match = m
	r = r.Normalize()
	if err := r.ValidateNew(); err != nil {
		return usageError{err: err}
	}
	if err := routing.CheckSeq(r.Seq); err != nil {
		return usageError{err: err}
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		added, err := ops.AddRoute(ctx, st, r)
		if errors.Is(err, ops.ErrNoGroup) {
			return fmt.Errorf("route add: group %s does not exist; add it first (switchboard group add %s)", r.Target, r.Target)
		}
		if err != nil {
			return err
		}
		warning := routing.NeverMatchWarning(added.Match)
		if warning == "" {
			warning = tableWarning(ctx, st, added)
		}
		return a.emit(map[string]any{"route": added, "warning": warning}, func(w io.Writer) {
			fmt.Fprintf(w, "added route %d: %s -> %s (%s, seq %d)\n", added.ID, routing.FormatMatch(added.Match), added.Target, added.Mode, added.Seq)
			if warning != "" {
				fmt.Fprintln(w, "warning: "+warning)
			}
		})
	})
}

// tableWarning checks the added route r against the stored routes, read
// once: a duplicate, else a route that wins for r's chat. When the routes
// cannot be read the warning says so: r is added, but unchecked.
func tableWarning(ctx context.Context, st *store.Store, r routing.Route) string {
	routes, err := st.ListRoutes(ctx)
	var t *routing.Table
	if err == nil {
		t, err = routing.New(routes)
	}
	if err != nil {
		return fmt.Sprintf("the routes could not be read to check route %d against them (%v); check with switchboard route list and route explain", r.ID, err)
	}
	if w := duplicateWarning(routes, r); w != "" {
		return w
	}
	return shadowWarning(t, r)
}

// duplicateWarning tells the operator when an earlier route has the very
// same match: it wins every message this one matches, so this one never
// does (a route added twice, or again after a first start seeded it).
func duplicateWarning(routes []routing.Route, r routing.Route) string {
	for _, o := range routes {
		if o.ID == r.ID || !maps.Equal(o.Match, r.Match) {
			continue
		}
		if o.Seq < r.Seq || o.Seq == r.Seq && o.ID < r.ID {
			return fmt.Sprintf("route %d (seq %d -> %s) has the same match and is tried first, so this one never matches; remove one (switchboard route rm ID) or give this one a lower --seq", o.ID, o.Seq, o.Target)
		}
	}
	return ""
}

// shadowWarning tells the operator when a route pinned to one chat loses to
// an earlier route for that chat, the usual surprise after adding a route.
func shadowWarning(t *routing.Table, r routing.Route) string {
	jid, ok := r.Match[routing.KeyChatJID]
	if !ok || !routing.IsLiteral(jid) {
		return ""
	}
	// A route's match values are globs, not JIDs: only literal ones name a
	// message to resolve.
	sender, verb := r.Match[routing.KeySender], r.Match[routing.KeyVerb]
	msg := routing.Message{ChatJID: adapters.JID(jid), Sender: adapters.JID(sender), Verb: adapters.Verb(verb), Topic: r.Match[routing.KeyTopic]}
	if win, ok := t.Resolve(msg); ok && win.ID != r.ID && routing.IsLiteral(sender) && routing.IsLiteral(verb) && routing.IsLiteral(msg.Topic) {
		return fmt.Sprintf("route %d (seq %d) is tried first and wins for %s; give this one a lower --seq (e.g. --seq %d)", win.ID, win.Seq, jid, win.Seq-1)
	}
	return ""
}

// routePage is which routes route list shows.
type routePage struct {
	limit int
	after int64 // a route's ID: the page after it
	all   bool
}

func (a *app) routeList(cmd *cobra.Command, p routePage) error {
	if !p.all && (p.limit < 1 || p.limit > store.MaxLimit) {
		return usagef("--limit %d: want 1 to %d routes a page; page on with --after, or list them all with --all", p.limit, store.MaxLimit)
	}
	if p.all && p.after != 0 {
		return usagef("--all lists every route; leave out --after")
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		var routes []routing.Route
		var more bool
		var err error
		if p.all {
			routes, err = st.ListRoutes(ctx)
		} else {
			routes, more, err = st.RoutesPage(ctx, p.after, p.limit)
		}
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("--after %d: no route has that id (see switchboard route list)", p.after)
		}
		if err != nil {
			return err
		}
		if routes == nil {
			routes = []routing.Route{}
		}
		err = a.emit(routes, func(w io.Writer) {
			fmt.Fprintln(w, "ID\tSEQ\tMODE\tTARGET\tMATCH")
			for _, r := range routes {
				fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\n", r.ID, r.Seq, r.Mode, r.Target, routing.FormatMatch(r.Match))
			}
		})
		if err != nil || !more {
			return err
		}
		w := a.stdout
		if a.jsonOut {
			w = a.stderr
		}
		_, err = fmt.Fprintf(w, "more routes: switchboard route list --limit %d --after %d\n", p.limit, routes[len(routes)-1].ID)
		return err
	})
}

func (a *app) routeRemove(cmd *cobra.Command, arg string) error {
	id, err := parseID("route", arg)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		r, err := ops.DeleteRoute(ctx, st, id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("route rm %d: no such route (see switchboard route list)", id)
		}
		if err != nil {
			return err
		}
		return a.emit(map[string]any{"removed": r}, func(w io.Writer) {
			fmt.Fprintf(w, "removed route %d: %s -> %s\n", r.ID, routing.FormatMatch(r.Match), r.Target)
		})
	})
}

// explainShow is how much of an explanation route explain lists.
type explainShow struct {
	limit int
	all   bool
}

func (a *app) routeExplain(cmd *cobra.Command, chat, sender, verb, topic string, show explainShow) error {
	m := routing.Message{Verb: adapters.Verb(verb), Topic: topic}
	var err error
	if m.ChatJID, err = adapters.ParseJID(chat); err != nil {
		return usageError{err: err}
	}
	if sender != "" {
		if m.Sender, err = adapters.ParseJID(sender); err != nil {
			return usagef("--sender: %w", err)
		}
	}
	if m.Verb != adapters.VerbMessage && m.Verb != adapters.VerbMention {
		return usagef("--verb %q: want %s or %s", m.Verb, adapters.VerbMessage, adapters.VerbMention)
	}
	if show.limit < 0 {
		return usagef("--limit %d: want 0 or more", show.limit)
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		x, err := explainRoute(ctx, st, m, show.all)
		if err != nil {
			return err
		}
		if !show.all && len(x.Rejected) > show.limit {
			x.more = len(x.Rejected) - show.limit
			x.Rejected = x.Rejected[:show.limit]
		}
		return a.emit(explainJSON(x), func(w io.Writer) { printExplanation(w, m, x) })
	})
}

// explained is an explanation with what it leaves out: more routes that
// could have matched this chat (past --limit), and others, for other chats.
type explained struct {
	routing.Explanation
	more, others int
}

// explainRoute explains m with the routes that could match its chat (all
// of them with all), and counts the routes for other chats tried first.
func explainRoute(ctx context.Context, st *store.Store, m routing.Message, all bool) (explained, error) {
	if all {
		t, err := routing.Load(ctx, st)
		if err != nil {
			return explained{}, fmt.Errorf("route table: %w", err)
		}
		return explained{Explanation: t.Explain(m)}, nil
	}
	rs, err := st.RoutesForChat(ctx, m.ChatJID)
	if err != nil {
		return explained{}, err
	}
	t, err := routing.New(rs)
	if err != nil {
		return explained{}, fmt.Errorf("route table: %w", err)
	}
	x := explained{Explanation: t.Explain(m)}
	var winner *routing.Route
	if x.Matched {
		winner = &x.Route
	}
	before, err := st.RoutesBefore(ctx, winner)
	if err != nil {
		return explained{}, err
	}
	x.others = before - len(x.Rejected)
	return x, nil
}

func explainJSON(x explained) map[string]any {
	ex := x.Explanation
	out := map[string]any{"matched": ex.Matched, "owner": ex.Owner}
	if ex.Matched {
		out["route"], out["folder"], out["mode"] = ex.Route, ex.Folder, ex.Mode
	}
	rej := make([]map[string]any, 0, len(ex.Rejected))
	for _, r := range ex.Rejected {
		rej = append(rej, map[string]any{"id": r.Route.ID, "seq": r.Route.Seq, "target": r.Route.Target, "reason": r.Reason})
	}
	out["rejected"] = rej
	// Routes tried first and not listed: past --limit, and for other chats.
	out["rejected_not_listed"] = map[string]int{"this_chat": x.more, "other_chats": x.others}
	return out
}

func printExplanation(w io.Writer, m routing.Message, x explained) {
	ex := x.Explanation
	if ex.Matched {
		fmt.Fprintf(w, "route %d wins: %s -> folder %s, mode %s\n", ex.Route.ID, routing.FormatMatch(ex.Route.Match), ex.Folder, ex.Mode)
	} else {
		fmt.Fprintf(w, "no route matches %s: the message is stored as unrouted and no turn runs\n", m.ChatJID)
	}
	if ex.Owner != "" {
		fmt.Fprintf(w, "owner of %s: %s\n", m.ChatJID, ex.Owner)
	} else {
		fmt.Fprintf(w, "owner of %s: none\n", m.ChatJID)
	}
	if len(ex.Rejected) > 0 {
		fmt.Fprintln(w, "tried first:")
		for _, r := range ex.Rejected {
			fmt.Fprintf(w, "  route %d (seq %d -> %s):\t%s\n", r.Route.ID, r.Route.Seq, r.Route.Target, r.Reason)
		}
	}
	if x.more > 0 {
		fmt.Fprintf(w, "  and %d more that could have matched this chat (--limit %d lists them)\n", x.more, len(ex.Rejected)+x.more)
	}
	if x.others > 0 {
		fmt.Fprintf(w, "%d routes for other chats were tried first and did not match (--all lists them)\n", x.others)
	}
}
