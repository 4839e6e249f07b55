package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchboard/adapters"
	"switchboard/grants"
	"switchboard/groups"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// callTimeout bounds one tool call.
const callTimeout = time.Minute

// toolDef is one tool of the registry: its category, schema and what it
// does. Adding a tool is adding a toolDef to its category's list (the
// tools_*.go file of that category); the grants catalog is derived from the
// registry, so the tool list is kept here alone.
type toolDef struct {
	category grants.Category
	tool     mcp.Tool
	run      func(ctx context.Context, c *call) (any, error)
	waits    bool // the call may wait for a person: no callTimeout
}

// registry returns every implemented tool, each declared once, by category
// in catalog order.
func registry() []*toolDef {
	var all []*toolDef
	for _, part := range []struct {
		category grants.Category
		tools    []*toolDef
	}{
		{grants.Messaging, messagingTools()},
		{grants.History, historyTools()},
		{grants.Routing, routingTools()},
		{grants.Groups, groupTools()},
		{grants.Tasks, taskTools()},
		{grants.Session, sessionTools()},
		{grants.Spend, spendTools()},
		{grants.Approvals, approvalTools()},
	} {
		for _, def := range part.tools {
			def.category = part.category
			all = append(all, def)
		}
	}
	return all
}

// catalogOf derives the grants catalog (names and categories) from defs.
func catalogOf(defs []*toolDef) (*grants.Catalog, error) {
	tools := make([]grants.Tool, len(defs))
	for i, def := range defs {
		tools[i] = grants.Tool{Name: def.tool.Name, Category: def.category}
	}
	return grants.NewCatalog(tools)
}

// offered returns the tools a gateway offers: the registry, without
// approve_tool unless approveTool (approvals.agent_tools is set). It is the
// one place that decides whether approve_tool is offered; the server, its
// tier defaults and `switchboard grants` all follow it.
func offered(approveTool bool) []*toolDef {
	defs := registry()
	if !approveTool {
		defs = slices.DeleteFunc(defs, func(d *toolDef) bool { return d.tool.Name == ApproveTool })
	}
	return defs
}

// Catalog returns the grants catalog of the tools a gateway offers
// (approveTool: whether approvals.agent_tools is set): every tool's name
// and category, in listing order. The server and `switchboard grants`
// evaluate the tier defaults over it.
func Catalog(approveTool bool) (*grants.Catalog, error) {
	c, err := catalogOf(offered(approveTool))
	if err != nil {
		return nil, fmt.Errorf("ipc: %w", err)
	}
	return c, nil
}

// GrantParams returns the grant params a call of tool may carry (its
// params, chat_jid as jid; topic too for a tool that names a message, whose
// thread decides its owner: topicFrom), sorted. open is true for a tool
// whose schema takes any params (approve_tool); ok is false for a tool the
// registry lacks. `switchboard grants set` refuses rules naming params no
// call has.
func GrantParams(tool string) (names []string, open, ok bool) {
	for _, def := range registry() {
		if def.tool.Name != tool {
			continue
		}
		for k := range def.tool.InputSchema.Properties {
			names = append(names, GrantParamName(k))
		}
		if topicFrom(def.tool) != "" {
			names = append(names, "topic")
		}
		slices.Sort(names)
		open, _ = def.tool.InputSchema.AdditionalProperties.(bool)
		return names, open, true
	}
	return nil, false, false
}

// GrantParamName is the grant param that a tool argument is checked as:
// the chat argument chat_jid is the param jid (CONTRACT §7), the others
// keep their names.
func GrantParamName(arg string) string {
	if arg == "chat_jid" {
		return "jid"
	}
	return arg
}

// MessageArg is the argument of tool naming a message whose thread a call
// carries as its grant param topic (topicFrom), "" for none: `switchboard
// grants check` looks the message up as a call does.
func MessageArg(tool string) string {
	for _, def := range registry() {
		if def.tool.Name == tool {
			return topicFrom(def.tool)
		}
	}
	return ""
}

// turnTopicDefault reports whether a call of tool with params goes, by
// default, into the thread or topic of the caller's running turn in its
// chat: reply without reply_to (runReply), send_file without topic
// (runSendFile).
func turnTopicDefault(tool string, params map[string]string) bool {
	switch tool {
	case "reply":
		return params["reply_to"] == ""
	case sendFile:
		return true // params["topic"] == "", checked by the caller
	}
	return false
}

// topicFrom is the argument naming a message (message_id or reply_to) whose
// thread a call of tool carries as its grant param topic, so that a message
// in a thread belongs to whoever owns that thread; "" for a tool that names
// no message or has a topic argument of its own. GrantParams and the call
// path both follow it.
func topicFrom(tool mcp.Tool) string {
	props := tool.InputSchema.Properties
	if _, own := props["topic"]; own {
		return ""
	}
	for _, k := range []string{"message_id", "reply_to"} {
		if _, ok := props[k]; ok {
			return k
		}
	}
	return ""
}

// call is one tool call after it was authorized.
type call struct {
	s      *Server
	b      Backend
	folder groups.Folder
	tier   int
	a      *access
	args   map[string]any
	// turn is the caller's running turn in the call's chat when the call
	// was checked, for the calls that go to it by default (reply without
	// reply_to, send_file without topic: turnTopicDefault); nil: none.
	turn *Turn
}

// Effects of a tool, for its annotations.
type effect int

const (
	readOnly    effect = iota // reads only
	additive                  // creates or changes, never destroys
	destructive               // may delete or overwrite
)

// newTool builds a tool: description, annotations and a closed schema
// (additionalProperties false, so a misspelt param is reported, not ignored).
func newTool(name, title, description string, e effect, params ...mcp.ToolOption) mcp.Tool {
	opts := []mcp.ToolOption{
		mcp.WithDescription(description),
		mcp.WithTitleAnnotation(title),
		mcp.WithReadOnlyHintAnnotation(e == readOnly),
		mcp.WithDestructiveHintAnnotation(e == destructive),
		mcp.WithIdempotentHintAnnotation(e == readOnly),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithSchemaAdditionalProperties(false),
	}
	return mcp.NewTool(name, append(opts, params...)...)
}

// chatParam is the chat_jid param every chat tool takes.
func chatParam(desc string) mcp.ToolOption {
	return mcp.WithString("chat_jid", mcp.Required(), mcp.Description(desc))
}

func limitParam(def, max int, what string) mcp.ToolOption {
	return mcp.WithInteger("limit", mcp.Min(1), mcp.Max(max),
		mcp.Description(fmt.Sprintf("How many %s to return (default %d, at most %d).", what, def, max)))
}

// handler wraps a tool: validate the arguments against the schema, authorize
// the call (grants with its params, then chat ownership), run it, and turn
// every outcome into a result. A refusal or failure is an isError result,
// never a JSON-RPC error or a dropped connection.
func (s *Server) handler(def *toolDef) server.ToolHandlerFunc {
	name := def.tool.Name
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		g := callerGroup(ctx)
		if g == nil {
			return mcp.NewToolResultError("internal error: no session"), nil
		}
		folder := g.folder
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("mcp tool panic", "folder", folder, "tool", name, "panic", r)
				res = mcp.NewToolResultError(name + ": internal error")
			}
		}()
		if g.removed.Load() {
			return mcp.NewToolResultError(fmt.Sprintf("refused: group %s no longer exists", folder)), nil
		}
		a := g.access.Load()
		args, err := argsOf(req)
		if err == nil {
			err = validateArgs(def.tool, args)
		}
		if err == nil {
			// Before grants: an ask must not put a call that cannot run
			// to a person, and an optional "" is absent for them too.
			err = checkJIDArgs(def.tool, args)
		}
		if err != nil {
			if !a.rules.Listed(name) {
				return refusal(folder, a.tier, name, a.rules.Check(name, nil).Reason), nil
			}
			return mcp.NewToolResultError(fmt.Sprintf("%s: %v", name, err)), nil
		}
		params := grantParams(args)
		if k := topicFrom(def.tool); k != "" && params[k] != "" && params["jid"] != "" {
			id := params[k]
			// A message in a thread belongs to whoever owns that thread.
			if m, found, err := s.opt.Backend.MessageByID(ctx, adapters.JID(params["jid"]), adapters.MessageID(id)); err == nil && found && m.Topic != "" {
				params["topic"] = m.Topic
			}
		}
		var turn *Turn
		if params["jid"] != "" && params["topic"] == "" && turnTopicDefault(name, params) {
			// The call goes to the running turn's thread (reply without
			// reply_to, send_file without topic): its owner decides, so a
			// group routed one thread of a chat answers there. The turn is
			// read once: the call goes where it was checked (and approved),
			// even when the turn ends or another starts meanwhile.
			if t, running := s.opt.Backend.RunningTurn(folder); running && string(t.Chat) == params["jid"] {
				turn = &t
				params["topic"] = t.Topic
			}
		}
		dir, _ := s.groupDir(folder) // "": absolute paths are checked as given
		d := Authorize(Caller{Folder: folder, Tier: a.tier, Rules: a.rules, Dir: dir}, s.opt.Backend.Table(), name, params)
		if d.Ask {
			// Before the call's own timeout: a person may take minutes.
			r := s.opt.Backend.Approve(ctx, ApprovalRequest{Folder: folder, Tool: name, Args: args, Reason: d.Reason})
			if !r.Allowed {
				s.count(name, "refused")
				s.log.Info("mcp call not approved", "folder", folder, "tool", name, "approval", r.ID, "reason", r.Reason)
				return mcp.NewToolResultError(fmt.Sprintf("%sgroup %s may not call %s: not approved: %s", RefusedPrefix, folder, name, r.Reason)), nil
			}
			s.log.Info("mcp call approved", "folder", folder, "tool", name, "approval", r.ID, "reason", r.Reason)
			// A person may take minutes: the call runs only if the group,
			// its grants and the chat's owner still let it now.
			if g.removed.Load() {
				return mcp.NewToolResultError(fmt.Sprintf("refused: group %s no longer exists", folder)), nil
			}
			a = g.access.Load()
			if now := Authorize(Caller{Folder: folder, Tier: a.tier, Rules: a.rules, Dir: dir}, s.opt.Backend.Table(), name, params); !now.Allow && !now.Ask {
				s.count(name, "refused")
				s.log.Info("mcp call refused after approval", "folder", folder, "tool", name, "reason", now.Reason)
				return refusal(folder, a.tier, name, "approved, but while it waited its grants or routes changed: "+now.Reason), nil
			}
		} else if !d.Allow {
			s.count(name, "refused")
			s.log.Info("mcp call refused", "folder", folder, "tool", name, "reason", d.Reason)
			return refusal(folder, a.tier, name, d.Reason), nil
		}
		if !def.waits {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, callTimeout)
			defer cancel()
		}
		start := time.Now()
		v, err := def.run(ctx, &call{s: s, b: s.opt.Backend, folder: folder, tier: a.tier, a: a, args: args, turn: turn})
		if err != nil {
			s.count(name, "error")
			s.log.Info("mcp call failed", "folder", folder, "tool", name, "ms", time.Since(start).Milliseconds(), "err", err)
			return mcp.NewToolResultError(fmt.Sprintf("%s: %v", name, err)), nil
		}
		s.count(name, "allowed")
		if s.log.Enabled(ctx, slog.LevelDebug) { // its arguments cost allocations on every call
			s.log.Debug("mcp call", "folder", folder, "tool", name, "ms", time.Since(start).Milliseconds())
		}
		if raw, isRaw := v.(json.RawMessage); isRaw {
			return mcp.NewToolResultText(string(raw)), nil // encoded already
		}
		b, err := json.Marshal(v)
		if err != nil {
			s.log.Error("encode mcp result", "folder", folder, "tool", name, "err", err)
			return mcp.NewToolResultError(name + ": internal error encoding the result"), nil
		}
		return mcp.NewToolResultText(string(b)), nil
	}
}

// RefusedPrefix starts the text of every call that the grants or chat
// ownership refused.
const RefusedPrefix = "refused: "

func refusal(folder groups.Folder, tier int, tool, reason string) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf("%sgroup %s (tier %d) may not call %s: %s", RefusedPrefix, folder, tier, tool, reason))
}

// argsOf returns the call's arguments as an object (none: empty).
func argsOf(req mcp.CallToolRequest) (map[string]any, error) {
	raw := req.Params.Arguments
	if raw == nil {
		return map[string]any{}, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonType(raw))
	}
	return m, nil
}

// validateArgs checks args against the tool's schema: known names, JSON
// types, enums and required params. JSON null counts as absent.
func validateArgs(t mcp.Tool, args map[string]any) error {
	props := t.InputSchema.Properties
	for k, v := range args {
		if v == nil {
			delete(args, k)
			continue
		}
		p, ok := props[k].(map[string]any)
		if open, _ := t.InputSchema.AdditionalProperties.(bool); !ok && open {
			continue // a schema open to more params (approve_tool's)
		}
		if !ok {
			names := slices.Sorted(maps.Keys(props))
			if len(names) == 0 {
				return fmt.Errorf("unknown param %q: this tool takes no params", k)
			}
			return fmt.Errorf("unknown param %q: this tool takes %s", k, strings.Join(names, ", "))
		}
		want, _ := p["type"].(string)
		if !typeMatches(want, v) {
			return fmt.Errorf("param %s: want %s, got %s", k, article(want), jsonType(v))
		}
		if enum, ok := p["enum"].([]string); ok && !slices.Contains(enum, v.(string)) {
			return fmt.Errorf("param %s: %q is not one of %s", k, v, strings.Join(enum, ", "))
		}
		// An integer under the schema's minimum (a limit, count, id or seq
		// of 0 or less) says nothing the tool could honour; one over a
		// maximum is clamped by the tool, as its description says.
		if min, ok := schemaNumber(p["minimum"]); ok && want == "integer" && v.(float64) < min {
			return fmt.Errorf("param %s: %v is below the minimum %v", k, v, min)
		}
	}
	for _, k := range t.InputSchema.Required {
		if _, ok := args[k]; !ok {
			return fmt.Errorf("missing required param %s", k)
		}
	}
	return nil
}

// jidParams are the params that hold a JID: a chat, or a message's sender.
var jidParams = []string{"chat_jid", "sender"}

// idParams are the params that hold a platform's id of a thread or a
// message: short on every platform, and at most maxID bytes, as an inbound
// message's id (adapters.Inbound.Validate).
var idParams = []string{"topic", "message_id", "reply_to", "before_id"}

const maxID = 256

// checkJIDArgs checks the JID and id params of a call before the grants
// see them: a value that is not a JID is an error naming the param,
// never a search or an engagement of a chat that cannot exist (an optional
// one given as "" counts as absent), and so is an id over maxID bytes.
func checkJIDArgs(t mcp.Tool, args map[string]any) error {
	for _, k := range jidParams {
		v, ok := args[k].(string)
		if !ok {
			continue
		}
		if v == "" && !slices.Contains(t.InputSchema.Required, k) {
			delete(args, k)
			continue
		}
		if err := adapters.JID(v).Validate(); err != nil {
			return fmt.Errorf("param %s: %w", k, err)
		}
	}
	for _, k := range idParams {
		if v, ok := args[k].(string); ok && len(v) > maxID {
			return fmt.Errorf("param %s: %d bytes, at most %d (a thread's or message's id)", k, len(v), maxID)
		}
	}
	return nil
}

// schemaNumber is a number in a tool's schema (mcp.Min keeps the type it
// was given).
func schemaNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func typeMatches(want string, v any) bool {
	switch want {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f) && math.Abs(f) < 1<<53
	case "number":
		_, ok := v.(float64)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return true
}

func jsonType(v any) string {
	switch x := v.(type) {
	case string:
		return "a string"
	case float64:
		switch {
		case x != math.Trunc(x):
			return "a number"
		case math.Abs(x) >= 1<<53:
			return fmt.Sprintf("%g, which is too large to be an exact integer", x)
		}
		return "an integer"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func article(t string) string {
	if t == "integer" || t == "object" || t == "array" {
		return "an " + t
	}
	return "a " + t
}

// grantParams turns arguments into grant params (GrantParamName): strings
// are taken as they are, other values in their JSON form.
func grantParams(args map[string]any) map[string]string {
	p := make(map[string]string, len(args))
	for k, v := range args {
		k = GrantParamName(k)
		switch x := v.(type) {
		case string:
			p[k] = x
		case bool:
			p[k] = strconv.FormatBool(x)
		case float64:
			p[k] = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			b, _ := json.Marshal(x)
			p[k] = string(b)
		}
	}
	return p
}

// Argument accessors; validateArgs has checked the types.

func (c *call) str(k string) string { s, _ := c.args[k].(string); return s }

// jid and msgID read a chat or sender JID and a platform message id as the
// model passed them, unchecked (JID.Validate checks a JID where a tool needs
// a valid one).
func (c *call) jid(k string) adapters.JID { return adapters.JID(c.str(k)) }

// folderArg is the folder named by argument k, as given: the tool checks it
// (folderParam checks it at once).
func (c *call) folderArg(k string) groups.Folder { return groups.Folder(c.str(k)) }

// folderParam is the folder named by argument k, validated.
func (c *call) folderParam(k string) (groups.Folder, error) { return groups.ParseFolder(c.str(k)) }

func (c *call) msgID(k string) adapters.MessageID { return adapters.MessageID(c.str(k)) }

func (c *call) has(k string) bool { _, ok := c.args[k]; return ok }

func (c *call) int(k string, def int) int {
	if f, ok := c.args[k].(float64); ok {
		return int(f)
	}
	return def
}

func (c *call) obj(k string) map[string]any { m, _ := c.args[k].(map[string]any); return m }

func (c *call) arr(k string) []any { a, _ := c.args[k].([]any); return a }

// ok is the result of a tool that has nothing else to say, encoded (a
// tool may return a json.RawMessage: the handler takes it as it is).
var ok = json.RawMessage(`{"ok":true}`)

// clamp bounds a limit param.
func clamp(n, def, max int) int {
	if n <= 0 {
		return def
	}
	return min(n, max)
}

// requireText checks a free-text param.
func requireText(name, s string, max int) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("%s is empty", name)
	}
	if len(s) > max {
		return fmt.Errorf("%s is %d bytes, at most %d allowed", name, len(s), max)
	}
	return nil
}

// count reports a call's outcome to Options.OnCall.
func (s *Server) count(tool, outcome string) {
	if s.opt.OnCall != nil {
		s.opt.OnCall(tool, outcome)
	}
}
