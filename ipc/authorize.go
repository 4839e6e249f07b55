package ipc

import (
	"fmt"
	"maps"
	"strings"

	"switchboard/adapters"
	"switchboard/grants"
	"switchboard/groups"
	"switchboard/routing"
)

// Caller is who makes a tool call: a group folder and its rules.
type Caller struct {
	Folder groups.Folder
	Tier   int
	Rules  *grants.Set
}

// Authorize decides a tool call (allow, ask or deny): the grant rules with the call's params, then
// — for a call that targets a chat (param "jid") — that the owner of the chat,
// or of its topic when the call names one (param "topic"), is in the caller's
// subtree (tier 0 excepted): a group routed one thread of a chat acts there. It is the only place that combines
// the two, used by the MCP server and by `switchboard grants check`.
func Authorize(c Caller, table *routing.Table, tool string, params map[string]string) grants.Decision {
	params = grantFolder(c, tool, params)
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

// grantFolder returns params with register_group's folder as the folder the
// call creates: a bare name below tier 0 is a child of the caller
// (runRegisterGroup), and a rule names folders by their path, so
// "!register_group(folder=acme/admin*)" must deny "admin" as it denies
// "acme/admin". params itself is left alone.
func grantFolder(c Caller, tool string, params map[string]string) map[string]string {
	f, ok := params["folder"]
	if tool != registerGroup || c.Tier == 0 || !ok || f == "" || strings.Contains(f, "/") {
		return params
	}
	params = maps.Clone(params)
	params["folder"] = string(c.Folder) + "/" + f
	return params
}
