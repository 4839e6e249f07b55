package ipc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
)

const matchDesc = "What the route captures: an object whose keys are any of platform, room, chat_jid, sender, verb, topic " +
	"and whose values are globs (* matches within one / segment, ** across). All given keys must match. " +
	"A group other than the operator must pin chat_jid to one chat its subtree already owns, e.g. {\"chat_jid\": \"slack:T1/channel/C42\"}."

func routeProps() map[string]any {
	return map[string]any{
		"match":  map[string]any{"type": "object", "description": matchDesc, "additionalProperties": map[string]any{"type": "string"}},
		"target": map[string]any{"type": "string", "description": "The group folder that receives matching messages, e.g. acme/eng."},
		"seq":    map[string]any{"type": "integer", "description": "Order: lower seq is tried first (ties by id)."},
		"mode":   map[string]any{"type": "string", "enum": []string{"trigger", "observe"}, "description": "trigger (default) runs a turn; observe keeps the message as context for the next turn."},
	}
}

func routingTools() []*toolDef {
	return []*toolDef{
		{tool: newTool("list_routes", "List routes",
			"List the routes in the order they are tried (by seq, then id). The operator sees every route; other groups see "+
				"the routes that target their own subtree. Returns {\"routes\": [{id, seq, match, target, mode}]}.",
			readOnly,
		), run: runListRoutes},
		{tool: newTool("add_route", "Add a route",
			"Route a chat (or messages matching a pattern) to a group folder. The route must target your group or a subgroup; "+
				"unless you are the operator it must pin chat_jid to a chat your subtree already owns, so a route can move "+
				"one of your chats between your own groups but cannot capture anyone else's. Without seq, a route pinned to "+
				"one chat goes ahead of all existing routes. Returns {\"route\": {...}}, with \"warning\" when its match can match no message "+
				"it seems meant for (e.g. chat_jid telegram:* where telegram:** was meant).",
			additive,
			mcp.WithObject("match", mcp.Required(), mcp.Description(matchDesc), mcp.AdditionalProperties(map[string]any{"type": "string"})),
			mcp.WithString("target", mcp.Required(), mcp.Description("The group folder that receives matching messages, e.g. acme/eng.")),
			mcp.WithInteger("seq", mcp.Description("Order: lower seq is tried first (ties by id). Default: ahead of every route when chat_jid is pinned, else 0.")),
			mcp.WithString("mode", mcp.Enum("trigger", "observe"), mcp.Description("trigger (default) runs a turn; observe keeps the message as context for the next turn.")),
		), run: runAddRoute},
		{tool: newTool("delete_route", "Delete a route",
			"Delete one route by id (see list_routes). Unless you are the operator, only routes that target your subtree and "+
				"pin a chat it owns. Returns {\"ok\": true, \"deleted\": {...}}.",
			destructive,
			mcp.WithInteger("id", mcp.Required(), mcp.Description("The route id.")),
		), run: runDeleteRoute},
		{tool: newTool("set_routes", "Replace routes",
			"Replace routes in one step, all or nothing. The operator replaces the whole table. Any other group replaces only "+
				"the routes it may delete (those targeting its subtree and pinned to chats it owns); other groups' routes stay. "+
				"Each new route follows the add_route rules. Returns {\"removed\": n, \"routes\": [...]}, with \"warning\" naming each "+
				"new route whose match can match no message it seems meant for, as add_route warns.",
			destructive,
			mcp.WithArray("routes", mcp.Required(), mcp.Description("The new routes, each {match, target, seq?, mode?}."),
				mcp.Items(map[string]any{"type": "object", "properties": routeProps(), "required": []string{"match", "target"}, "additionalProperties": false})),
		), run: runSetRoutes},
		{tool: newTool("explain_route", "Explain routing",
			"Say which route wins for a message in a chat, which folder it reaches and in which mode, why each earlier route "+
				"did not match, and which folder owns the chat. Use it when messages do not arrive where you expect. "+
				"Returns {\"matched\", \"route\", \"folder\", \"mode\", \"owner\", \"rejected\": [...]}.",
			readOnly,
			chatParam(chatDesc),
			mcp.WithString("sender", mcp.Description("Sender JID of the message, e.g. web:user/ann.")),
			mcp.WithString("verb", mcp.Enum(string(adapters.VerbMessage), string(adapters.VerbMention)), mcp.Description("message (default) or mention (the bot was mentioned, a DM, or a reply to the bot).")),
			mcp.WithString("topic", mcp.Description("Thread or topic id of the message.")),
		), run: runExplainRoute},
	}
}

func runListRoutes(_ context.Context, c *call) (any, error) {
	routes := slices.DeleteFunc(c.b.Table().Routes(), func(r routing.Route) bool { return !c.seesRoute(r) })
	return map[string]any{"routes": routes}, nil
}

// maxSeq bounds a route's seq (routing.ValidateNew checks it too; here the
// error names the JSON value as given).
const maxSeq = routing.MaxSeq

// routeArg reads one route object ({match, target, seq?, mode?}).
func routeArg(v map[string]any) (r routing.Route, seqGiven bool, err error) {
	m, ok := v["match"].(map[string]any)
	if !ok {
		return r, false, errors.New("match: want an object of key → glob")
	}
	r.Match = make(map[string]string, len(m))
	for k, g := range m {
		s, ok := g.(string)
		if !ok {
			return r, false, fmt.Errorf("match key %s: want a string glob, got %s", k, jsonType(g))
		}
		r.Match[k] = s
	}
	target, ok := v["target"].(string)
	if !ok {
		return r, false, errors.New("target: want a group folder string")
	}
	r.Target = groups.Folder(target)
	if s, ok := v["seq"]; ok && s != nil {
		f, isNum := s.(float64)
		if !isNum || !typeMatches("integer", f) {
			return r, false, fmt.Errorf("seq: want an integer, got %s", jsonType(s))
		}
		if f < -maxSeq || f > maxSeq {
			return r, false, fmt.Errorf("seq: %g is out of range; want an integer from %d to %d", f, -maxSeq, maxSeq)
		}
		r.Seq, seqGiven = int(f), true
	}
	if m, ok := v["mode"]; ok && m != nil {
		s, _ := m.(string)
		r.Mode = routing.Mode(s)
	}
	for k := range v {
		if !slices.Contains([]string{"match", "target", "seq", "mode"}, k) {
			return r, false, fmt.Errorf("unknown route field %q: a route has match, target, seq and mode", k)
		}
	}
	r = r.Normalize()
	return r, seqGiven, r.ValidateNew()
}

// checkRouteAdd validates r for c: the target exists and the caller may add it.
func (c *call) checkRouteAdd(t *routing.Table, r routing.Route, known []groups.Folder) error {
	if !slices.Contains(known, r.Target) {
		return fmt.Errorf("target group %s does not exist", r.Target)
	}
	if jid, ok := r.Match[routing.KeyChatJID]; ok && routing.IsLiteral(jid) {
		if _, err := adapters.ParseJID(jid); err != nil {
			return fmt.Errorf("match chat_jid: %w", err)
		}
	}
	return t.CheckAdd(c.folder, c.tier, r)
}

func runAddRoute(ctx context.Context, c *call) (any, error) {
	r, seqGiven, err := routeArg(c.args)
	if err != nil {
		return nil, err
	}
	known, err := c.b.Groups(ctx)
	if err != nil {
		return nil, err
	}
	t := c.b.Table()
	if jid, ok := r.Match[routing.KeyChatJID]; !seqGiven && ok && routing.IsLiteral(jid) {
		r.Seq = t.AheadSeq() // before the check: where a route goes decides what it captures
	}
	if err := c.checkRouteAdd(t, r, known); err != nil {
		return nil, err
	}
	added, err := c.b.AddRoute(ctx, r)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"route": added}
	if w := routing.NeverMatchWarning(added.Match); w != "" {
		out["warning"] = w // as route add warns the operator
	}
	return out, nil
}

func runDeleteRoute(ctx context.Context, c *call) (any, error) {
	id := int64(c.int("id", 0))
	t := c.b.Table()
	routes := t.Routes()
	i := slices.IndexFunc(routes, func(r routing.Route) bool { return r.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("no route has id %d (see list_routes)", id)
	}
	if err := t.CheckDelete(c.folder, c.tier, routes[i]); err != nil {
		return nil, err
	}
	deleted, found, err := c.b.DeleteRoute(ctx, id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("route %d was deleted meanwhile", id)
	}
	return map[string]any{"ok": true, "deleted": deleted}, nil
}

func runSetRoutes(ctx context.Context, c *call) (any, error) {
	items := c.arr("routes")
	known, err := c.b.Groups(ctx)
	if err != nil {
		return nil, err
	}
	t := c.b.Table()
	add := make([]routing.Route, 0, len(items))
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("routes[%d]: want an object {match, target, seq?, mode?}, got %s", i, jsonType(it))
		}
		r, seqGiven, err := routeArg(obj)
		if jid, ok := r.Match[routing.KeyChatJID]; err == nil && c.tier != 0 && !seqGiven && ok && routing.IsLiteral(jid) {
			// As add_route: a group's pinned route goes ahead of the
			// others' catch-alls, or the chat it replaces would pass
			// to whichever route follows.
			r.Seq = t.AheadSeq()
		}
		if err == nil {
			err = c.checkRouteAdd(t, r, known)
		}
		if err != nil {
			return nil, fmt.Errorf("routes[%d]: %w", i, err)
		}
		add = append(add, r)
	}
	var remove []int64
	for _, r := range t.Routes() {
		if t.CheckDelete(c.folder, c.tier, r) == nil {
			remove = append(remove, r.ID)
		}
	}
	added, swapped, err := c.b.SwapRoutes(ctx, remove, add)
	if err != nil {
		return nil, err
	}
	if !swapped {
		return nil, errors.New("the routes changed meanwhile; nothing was replaced, try again")
	}
	out := map[string]any{"removed": len(remove), "routes": added}
	var warns []string
	for i, r := range add { // indexed as the caller's routes
		if w := routing.NeverMatchWarning(r.Match); w != "" {
			warns = append(warns, fmt.Sprintf("routes[%d]: %s", i, w))
		}
	}
	if len(warns) > 0 {
		out["warning"] = strings.Join(warns, "; ") // as add_route warns
	}
	return out, nil
}

func runExplainRoute(_ context.Context, c *call) (any, error) {
	verb := adapters.Verb(c.str("verb"))
	if verb == "" {
		verb = adapters.VerbMessage
	}
	x := c.b.Table().Explain(routing.Message{ChatJID: c.jid("chat_jid"), Sender: c.jid("sender"), Verb: verb, Topic: c.str("topic")})
	rejected := make([]map[string]any, 0, len(x.Rejected))
	for _, rj := range x.Rejected {
		reason := rj.Reason
		if !c.seesRoute(rj.Route) {
			reason = "a route of another group; it does not match"
		}
		rejected = append(rejected, map[string]any{"route": c.routeView(rj.Route), "reason": reason})
	}
	out := map[string]any{"matched": x.Matched, "owner": x.Owner, "rejected": rejected}
	if x.Matched {
		out["route"], out["folder"], out["mode"] = c.routeView(x.Route), x.Folder, x.Mode
	}
	return out, nil
}

// seesRoute reports whether the caller may see r in full: the operator sees
// every route, any other group the routes into its subtree (as list_routes).
func (c *call) seesRoute(r routing.Route) bool {
	return c.tier == 0 || c.folder.Contains(r.Target)
}

// routeView is r as the caller may see it: another group's route shows only
// its id and seq, not what it matches.
func (c *call) routeView(r routing.Route) any {
	if c.seesRoute(r) {
		return r
	}
	return map[string]any{"id": r.ID, "seq": r.Seq}
}
