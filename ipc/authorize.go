package ipc

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"switchboard/adapters"
	"switchboard/grants"
	"switchboard/groups"
	"switchboard/routing"
	"switchboard/scheduler"
)

// Caller is who makes a tool call: a group folder and its rules.
type Caller struct {
	Folder groups.Folder
	Tier   int
	Rules  *grants.Set
	// Dir is the group's working directory, absolute: a send_file path
	// given as an absolute path inside it is checked as the relative path
	// it names. "" leaves absolute paths as given.
	Dir string
}

// Authorize decides a tool call (allow, ask or deny): the grant rules with the call's params, then
// — for a call that targets a chat (param "jid") — that the owner of the chat,
// or of its topic when the call names one (param "topic"), is in the caller's
// subtree (tier 0 excepted): a group routed one thread of a chat acts there. It is the only place that combines
// the two, used by the MCP server and by `switchboard grants check`.
func Authorize(c Caller, table *routing.Table, tool string, params map[string]string) grants.Decision {
	params = callParams(c, tool, params)
	d := c.Rules.Check(tool, params)
	if (!d.Allow && !d.Ask) || c.Tier == 0 {
		return d
	}
	jid, ok := params["jid"]
	if !ok {
		return d
	}
	topic := params["topic"]
	owner, owned := table.Owner(adapters.JID(jid), topic)
	where := "chat " + jid
	if topic != "" {
		where = fmt.Sprintf("topic %s of chat %s", topic, jid)
	}
	switch {
	case !owned:
		d.Allow, d.Ask = false, false
		d.Reason = fmt.Sprintf("denied: %s has no owner (no route matches it), so only the operator may act on it", where)
	case !c.Folder.Contains(owner):
		d.Allow, d.Ask = false, false
		d.Reason = fmt.Sprintf("denied: %s belongs to group %s, outside %s's subtree", where, owner, c.Folder)
	}
	return d
}

// callParams returns params with the values a tool reads in more than one
// spelling written as what the call acts on, so that a rule naming that
// sees every spelling of it (params itself is left alone):
//   - register_group's folder: a bare name below tier 0 is a child of the
//     caller (runRegisterGroup), and a rule names folders by their path:
//     "!register_group(folder=acme/admin*)" denies "admin" as it denies
//     "acme/admin".
//   - schedule_task's schedule: scheduler.Spelling, so that
//     "!schedule_task(schedule=@every*)" refuses "every 1m" too.
//   - send_file's path: the file's path relative to the group folder,
//     cleaned (groupFile), so "send_file(path=outbox/*)" does not let
//     "outbox/../secret.txt" through, nor "!send_file(path=private/*)"
//     "./private/x", "private//x" or the absolute path of private/x.
//   - like's reaction: the emoji itself (reactionEmoji), so that
//     "!like(reaction=👎)" refuses ":thumbsdown:", "-1" and "👎\ufe0f"
//     too, and "!like(reaction=❤️)" refuses ":heart:" and "❤".
func callParams(c Caller, tool string, params map[string]string) map[string]string {
	set := func(k, v string) map[string]string {
		params = maps.Clone(params)
		params[k] = v
		return params
	}
	switch tool {
	case registerGroup:
		if f, ok := params["folder"]; ok && c.Tier != 0 && f != "" && !strings.Contains(f, "/") {
			return set("folder", string(c.Folder)+"/"+f)
		}
	case scheduleTask:
		if v, ok := params["schedule"]; ok {
			if sp := scheduler.Spelling(v); sp != v {
				return set("schedule", sp)
			}
		}
	case likeTool:
		if r, ok := params["reaction"]; ok {
			if e := reactionEmoji(r); e != r {
				return set("reaction", e)
			}
		}
	case sendFile:
		p, ok := params["path"]
		if !ok {
			break
		}
		rel := p
		if filepath.IsAbs(p) && c.Dir != "" {
			if r, err := filepath.Rel(c.Dir, filepath.Clean(p)); err == nil {
				rel = r
			}
		}
		if filepath.IsLocal(rel) { // else the call fails: it names no file in the folder
			if clean := filepath.ToSlash(filepath.Clean(rel)); clean != p {
				return set("path", clean)
			}
		}
	}
	return params
}

// reactionEmoji is the emoji reaction names, in its emoji form as a
// keyboard types it (adapters.EmojiPresentation: ❤ and ❤️ are ❤️, 👎 is
// 👎): a shortcode's emoji, or the emoji as given; a name not known here
// (a custom emoji's) is returned as it is.
func reactionEmoji(reaction string) string {
	e, ok := adapters.EmojiByName(reaction)
	if !ok {
		e = strings.ReplaceAll(strings.TrimSpace(reaction), "\ufe0f", "")
	}
	return adapters.EmojiPresentation(e)
}
