package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/grants"
	"switchboard/groups"
	"switchboard/ipc"
	"switchboard/routing"
	"switchboard/store"
)

const grantsHelp = `A group's rules are its tier defaults followed by its stored overrides.
A rule is [!|?]action[(param=glob, ...)]: the last rule that matches a call
decides, ! denies, ? asks (the call waits until one of the group's approvers
allows or denies it: switchboard approvals --help; it is listed like an
allow), and no matching rule denies. A rule that does not parse
matches nothing. The chat argument of a tool is the param jid; a call on a
chat must also target a chat owned by the group's subtree (tier 0 excepted).`

func (a *app) grantsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "grants", Short: "Show, set and check a group's tool grants", Long: grantsHelp}
	show := &cobra.Command{
		Use: "show FOLDER", Short: "Show a group's tier, rules and the tools it can see", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.grantsShow(cmd, groups.Folder(args[0])) },
	}
	set := &cobra.Command{
		Use:   "set FOLDER RULE...",
		Short: "Replace a group's override rules (no rules: clear them)",
		Example: `  switchboard grants set main '!like' 'send(jid=web:*)' '?send(jid=telegram:*)'
  switchboard grants set acme/eng 'schedule_task'
  switchboard grants set main          # back to the tier defaults`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.grantsSet(cmd, groups.Folder(args[0]), args[1:])
		},
	}
	check := &cobra.Command{
		Use:   "check FOLDER TOOL [PARAM=VALUE...]",
		Short: "Say whether a group may call a tool (allow, ask or deny), and which rule decided",
		Example: `  switchboard grants check main send jid=web:lobby
  switchboard grants check acme/eng/oncall delete`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.grantsCheck(cmd, groups.Folder(args[0]), args[1], args[2:])
		},
	}
	cmd.AddCommand(show, set, check)
	return cmd
}

// requireGroup fails unless folder is a known group.
func requireGroup(ctx context.Context, st *store.Store, folder groups.Folder) error {
	if err := folder.Validate(); err != nil {
		return usageError{err: err}
	}
	ok, err := st.GroupExists(ctx, folder)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("group %s does not exist (see switchboard group list)", folder)
	}
	return nil
}

// groupRules returns an existing group's tier, stored overrides and compiled
// rules over the MCP tool catalog.
func (a *app) groupRules(ctx context.Context, st *store.Store, cat *grants.Catalog, folder groups.Folder) (int, []string, *grants.Set, error) {
	if err := requireGroup(ctx, st, folder); err != nil {
		return 0, nil, nil, err
	}
	over, err := st.GrantOverrides(ctx, folder)
	if err != nil {
		return 0, nil, nil, err
	}
	tier := groups.Tier(folder, a.cfg.OperatorFolder)
	return tier, over, cat.ForGroup(tier, over), nil
}

// catalog is the grants catalog of the tools the configured gateway
// offers (approve_tool only while approvals.agent_tools is set), the one
// every grants command lists and checks against.
func (a *app) catalog() (*grants.Catalog, error) {
	return ipc.Catalog(len(a.cfg.Approvals.AgentTools) > 0)
}

func (a *app) grantsShow(cmd *cobra.Command, folder groups.Folder) error {
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		cat, err := a.catalog() // after withStore loaded the config
		if err != nil {
			return err
		}
		tier, over, set, err := a.groupRules(ctx, st, cat, folder)
		if err != nil {
			return err
		}
		listed := set.ListedTools(cat.Tools())
		asks := askingTools(set.Rules(), listed)
		var broken []string
		for _, r := range over {
			if _, err := grants.Parse(r); err != nil {
				broken = append(broken, err.Error())
			}
		}
		out := map[string]any{"folder": folder, "tier": tier, "defaults": cat.Defaults(tier), "overrides": nonNil(over), "tools": nonNil(listed),
			"ask": nonNil(asks), "invalid": nonNil(broken)}
		return a.emit(out, func(w io.Writer) {
			fmt.Fprintf(w, "group %s: tier %d\n", folder, tier)
			fmt.Fprintf(w, "tier defaults: %s\n", strings.Join(cat.Defaults(tier), " "))
			if len(over) == 0 {
				fmt.Fprintln(w, "overrides: none")
			} else {
				fmt.Fprintf(w, "overrides: %s\n", strings.Join(over, " "))
			}
			for _, b := range broken {
				fmt.Fprintf(w, "warning: %s (this rule matches nothing)\n", b)
			}
			fmt.Fprintf(w, "tools it can see (%d): %s\n", len(listed), strings.Join(listed, " "))
			if len(asks) > 0 {
				fmt.Fprintf(w, "tools that may ask an approver first (%d): %s\n", len(asks), strings.Join(asks, " "))
			}
		})
	})
}

// askingTools returns the tools of listed that some ask rule ('?') of
// rules names: their calls, or some of them, wait for an approver.
func askingTools(rules, listed []string) []string {
	var asks []string
	for _, text := range rules {
		if r, err := grants.Parse(text); err == nil && r.Ask {
			asks = append(asks, text)
		}
	}
	if len(asks) == 0 {
		return nil
	}
	return grants.Compile(asks).ListedTools(listed) // a set of ask rules lists what they name
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (a *app) grantsSet(cmd *cobra.Command, folder groups.Folder, rules []string) error {
	if err := grants.Validate(rules); err != nil {
		return usageError{err: err}
	}
	warnings, err := ruleNameWarnings(rules)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		if err := requireGroup(ctx, st, folder); err != nil {
			return err
		}
		if err := st.SetGrantOverrides(ctx, folder, rules); err != nil {
			return err
		}
		return a.emit(map[string]any{"folder": folder, "overrides": nonNil(rules), "warnings": nonNil(warnings)}, func(w io.Writer) {
			if len(rules) == 0 {
				fmt.Fprintf(w, "cleared overrides of %s: tier defaults apply\n", folder)
			} else {
				fmt.Fprintf(w, "set %d override rule(s) on %s\n", len(rules), folder)
			}
			for _, warning := range warnings {
				fmt.Fprintln(w, "warning: "+warning)
			}
		})
	})
}

func (a *app) grantsCheck(cmd *cobra.Command, folder groups.Folder, tool string, args []string) error {
	params := map[string]string{}
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return usagef("param %q: want NAME=VALUE, e.g. jid=web:lobby", arg)
		}
		k = ipc.GrantParamName(k) // chat_jid, the tools' argument name, is jid
		if _, twice := params[k]; twice {
			return usagef("param %s is given twice; a call carries one value of each", k)
		}
		// A call's chat and sender are JIDs, checked before its grants.
		if k == "jid" || k == "sender" {
			if err := adapters.JID(v).Validate(); err != nil {
				return usagef("param %s: %w", k, err)
			}
		}
		params[k] = v
	}
	warning := callNameWarning(tool, params)
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		cat, err := a.catalog() // after withStore loaded the config
		if err != nil {
			return err
		}
		tier, _, set, err := a.groupRules(ctx, st, cat, folder)
		if err != nil {
			return err
		}
		// Authorize looks only at the owner of the jid param's chat: the
		// routes that could match that chat decide it.
		var rs []routing.Route
		if jid, ok := params["jid"]; ok {
			if rs, err = st.RoutesForChat(ctx, adapters.JID(jid)); err != nil {
				return err
			}
			// A message in a thread is checked with its thread as the
			// topic, as the MCP server checks a call naming it.
			if k := ipc.MessageArg(tool); k != "" && params[k] != "" {
				m, err := st.MessageByID(ctx, adapters.JID(jid), adapters.MessageID(params[k]))
				switch {
				case err == nil && m.Topic != "":
					params["topic"] = m.Topic
				case err != nil && !errors.Is(err, store.ErrNotFound):
					return err
				}
			}
		}
		table, err := routing.New(rs)
		if err != nil {
			return fmt.Errorf("route table: %w", err)
		}
		dir, _ := filepath.Abs(groups.Layout{DataDir: a.cfg.DataDir}.Dir(folder)) // "": absolute paths as given
		d := ipc.Authorize(ipc.Caller{Folder: folder, Tier: tier, Rules: set, Dir: dir}, table, tool, params)
		if tool == ipc.ApproveTool && !slices.Contains(cat.Tools(), tool) { // not offered: as grants show and the MCP server
			d = grants.Decision{Reason: "approve_tool is not offered: approvals.agent_tools is not set " +
				"(set it in switchboard.yaml to the Claude Code tools that ask, e.g. [Bash, Write])"}
		}
		verdict := d.Verdict() // allow, ask (an approver decides each call) or deny
		out := map[string]any{"decision": verdict, "rule": d.Rule, "reason": d.Reason, "folder": folder, "tier": tier, "tool": tool}
		if warning != "" {
			out["warning"] = warning
		}
		return a.emit(out, func(w io.Writer) {
			fmt.Fprintln(w, verdict)
			fmt.Fprintln(w, d.Reason)
			if warning != "" {
				fmt.Fprintln(w, "warning: "+warning)
			}
		})
	})
}

// ruleNameWarnings says which rules parse but can match no call: the
// action names no tool the gateway may offer, or a param that no call of
// those tools carries. Such a rule is stored (a rule that matches nothing
// is inert, CONTRACT §7), but an inert deny leaves allowed what the
// operator meant to deny (!sendd for !send), so the operator is told.
func ruleNameWarnings(rules []string) ([]string, error) {
	cat, err := ipc.Catalog(true) // approve_tool too: a rule may anticipate approvals.agent_tools
	if err != nil {
		return nil, err
	}
	var warnings []string
	for _, text := range rules {
		r, err := grants.Parse(text)
		if err != nil {
			return nil, usageError{err: err}
		}
		tools := grants.Compile([]string{r.Action}).ListedTools(cat.Tools())
		if len(tools) == 0 {
			if strings.Contains(r.Action, "*") {
				warnings = append(warnings, fmt.Sprintf("rule %q matches no call: no tool's name matches %s (see switchboard grants show FOLDER)", text, r.Action))
			} else {
				warnings = append(warnings, fmt.Sprintf("rule %q matches no call: no tool is named %s (see switchboard grants show FOLDER)", text, r.Action))
			}
			continue
		}
		for _, p := range r.Params {
			if toolsCarry(tools, p.Name) {
				if w := jidGlobWarning(p.Name, p.Glob); w != "" {
					warnings = append(warnings, fmt.Sprintf("rule %q matches no call: %s", text, w))
					break
				}
				continue
			}
			if len(tools) == 1 {
				names, _, _ := ipc.GrantParams(tools[0])
				warnings = append(warnings, fmt.Sprintf("rule %q matches no call: %s has no param %s (its params: %s)", text, tools[0], p.Name, strings.Join(names, ", ")))
			} else {
				warnings = append(warnings, fmt.Sprintf("rule %q matches no call: no tool matching %s has a param %s", text, r.Action, p.Name))
			}
			break
		}
	}
	return warnings, nil
}

// jidGlobWarning says why the glob of a JID param (jid, sender) matches no
// JID a call can carry, or "": a call's JIDs are checked (ParseJID) before
// the grants see them, so "jid=Telegram:*" or "jid=web: lobby" is a rule
// that never decides, and as a deny leaves allowed what it was meant to
// refuse.
func jidGlobWarning(param, glob string) string {
	if param != "jid" && param != "sender" {
		return ""
	}
	if platform, _, ok := strings.Cut(glob, ":"); ok && !strings.Contains(platform, "*") && (platform == "" || !adapters.IsPlatformName(platform)) {
		return fmt.Sprintf("%s glob %q: a JID's platform (before the :) is lowercase letters and digits, e.g. telegram", param, glob)
	}
	for _, r := range glob {
		if r != '*' && !adapters.IsJIDRune(r) {
			return fmt.Sprintf("%s glob %q has %q, which no JID has", param, glob, r)
		}
	}
	if !strings.Contains(glob, "*") {
		if err := adapters.JID(glob).Validate(); err != nil {
			return fmt.Sprintf("%s glob %q is no JID: %v", param, glob, err)
		}
	}
	return ""
}

// toolsCarry reports whether a call of some tool of tools carries the grant
// param name.
func toolsCarry(tools []string, name string) bool {
	for _, t := range tools {
		names, open, _ := ipc.GrantParams(t)
		if open || slices.Contains(names, name) {
			return true
		}
	}
	return false
}

// callNameWarning says, for a grants check, when the tool does not exist
// or a param is one no call of it carries: the answer (tier 0's "*" allows
// any name) is then about a call nobody can make. "" when neither.
func callNameWarning(tool string, params map[string]string) string {
	names, open, ok := ipc.GrantParams(tool)
	if !ok {
		return fmt.Sprintf("no tool is named %s (see switchboard grants show FOLDER)", tool)
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !open && !slices.Contains(names, k) {
			return fmt.Sprintf("%s has no param %s (its params: %s)", tool, k, strings.Join(names, ", "))
		}
	}
	return ""
}
