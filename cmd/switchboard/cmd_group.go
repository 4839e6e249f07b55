package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/gateway"
	"switchboard/groups"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/scheduler"
	"switchboard/store"
)

func (a *app) groupCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Add, list, set and remove group folders",
		Long: `A group is a folder such as main or acme/eng/oncall: lowercase [a-z0-9_-]
segments joined by /, at most 6 deep. Its tier follows from its place: the
operator folder is tier 0, other top-level folders tier 1, depth 2 tier 2,
deeper tier 3. The agent of a group runs in <data_dir>/groups/<folder>.`,
	}
	var jid string
	add := &cobra.Command{
		Use:   "add FOLDER",
		Short: "Create a group (and its folder on disk)",
		Example: `  switchboard group add acme
  switchboard group add acme/eng --jid slack:T1/channel/C42   # also route that chat to it`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.groupAdd(cmd, args[0], jid) },
	}
	add.Flags().StringVar(&jid, "jid", "", "also add a route that sends this chat to the group, ahead of existing routes")
	list := &cobra.Command{
		Use:   "list",
		Short: "List groups with their tier",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.groupList(cmd) },
	}
	rm := &cobra.Command{
		Use:   "rm FOLDER",
		Short: "Remove a group (its folder on disk is kept)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return a.groupRemove(cmd, args[0]) },
	}
	var midTurn string
	set := &cobra.Command{
		Use:   "set FOLDER --mid-turn MODE",
		Short: "Set a group's own settings",
		Long: `--mid-turn says what a message does that arrives while the group's turn runs in
its chat: queue (it waits for the next turn), steer (it is written into the
running agent; needs agent.input: stream-json, else it queues) or interrupt
(the turn is stopped and one new turn answers both). default takes agent.mid_turn
again. A running gateway applies it to the next message; groups[].mid_turn in
the config sets it again at the next start.`,
		Example: `  switchboard group set main --mid-turn steer`,
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return a.groupSet(cmd, args[0], midTurn) },
	}
	set.Flags().StringVar(&midTurn, "mid-turn", "", "queue, steer, interrupt or default")
	_ = set.MarkFlagRequired("mid-turn")
	cmd.AddCommand(add, list, rm, set)
	return cmd
}

func (a *app) groupSet(cmd *cobra.Command, name, midTurn string) error {
	folder, err := groups.ParseFolder(name)
	if err != nil {
		return usageError{err: err}
	}
	mode := midTurn
	if mode == "default" {
		mode = ""
	} else if err := ops.CheckMidTurn(mode); err != nil {
		return usagef("--mid-turn %q: want %s or default (agent.mid_turn again)", mode, strings.Join(ops.MidTurnModes, ", "))
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		if err := ops.SetMidTurn(ctx, st, ops.Operator, folder, mode); err != nil {
			return fmt.Errorf("group set %s: %w", folder, err)
		}
		return a.emit(map[string]any{"folder": folder, "mid_turn": midTurn}, func(w io.Writer) {
			fmt.Fprintf(w, "group %s: mid_turn %s\n", folder, midTurn)
			if mode == string(gateway.MidTurnSteer) && a.cfg.Agent.Input != string(agent.InputStreamJSON) {
				fmt.Fprintln(w, "note: steer queues while agent.input is not stream-json: the agent takes no input during a turn "+
					"(set agent.input: stream-json, Claude Code with --input-format stream-json --output-format stream-json --verbose)")
			}
		})
	})
}

func (a *app) groupAdd(cmd *cobra.Command, name, jid string) error {
	folder, err := groups.ParseFolder(name)
	if err != nil {
		return usageError{err: err}
	}
	if jid != "" {
		if _, err := parseChat(jid); err != nil {
			return usagef("--jid: %w", err)
		}
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		exe, err := os.Executable()
		if err != nil {
			exe = "switchboard"
		}
		layout := groups.Layout{DataDir: a.cfg.DataDir}
		// A missing parent is warned of, not refused (as in a config
		// seed): the tier follows from the folder's depth alone.
		var warnings []string
		if p := folder.Parent(); p != "" {
			if ok, err := st.GroupExists(ctx, p); err != nil {
				return err
			} else if !ok {
				warnings = append(warnings, fmt.Sprintf("its parent group %s does not exist: %s cannot escalate_group and no parent's agent can manage it until you add it (switchboard group add %s)", p, folder, p))
			}
		}
		r, err := ops.AddGroup(ctx, st, layout, ops.Operator, ops.NewGroup{Folder: folder, Pin: adapters.JID(jid), Exe: exe, Orphan: true})
		switch {
		case errors.Is(err, store.ErrExists):
			return fmt.Errorf("group add %s: it already exists", folder)
		case err != nil:
			return fmt.Errorf("group add %s: %w", folder, err)
		}
		out := map[string]any{"folder": folder, "tier": groups.Tier(folder, a.cfg.OperatorFolder), "dir": layout.Dir(folder)}
		if r != nil {
			out["route"] = *r
			// A pin no chat has (telegram:group/-100…) routes nothing.
			if w := routing.NeverMatchWarning(r.Match); w != "" {
				warnings = append(warnings, w)
			}
		}
		// The gateway could not listen on the group's socket: its agent
		// would have no tools, said only in the gateway's log.
		if sock, err := filepath.Abs(layout.SocketPath(folder)); err == nil {
			if err := ipc.CheckSocketPath(folder, sock); err != nil {
				warnings = append(warnings, "its agent gets no MCP tools: "+strings.TrimPrefix(err.Error(), ipc.ErrSocketPath.Error()+": "))
			}
		}
		if len(warnings) > 0 {
			out["warning"] = strings.Join(warnings, "; ")
		}
		return a.emit(out, func(w io.Writer) {
			fmt.Fprintf(w, "added group %s (tier %v) at %s\n", folder, out["tier"], out["dir"])
			if r != nil {
				fmt.Fprintf(w, "added route %d (seq %d): chat_jid=%s -> %s\n", r.ID, r.Seq, jid, folder)
			}
			for _, warning := range warnings {
				fmt.Fprintln(w, "warning: "+warning)
			}
		})
	})
}

type groupRow struct {
	Folder groups.Folder `json:"folder"`
	Tier   int           `json:"tier"`
	Parent groups.Folder `json:"parent,omitempty"`
	Routes int           `json:"routes"`
}

func (a *app) groupList(cmd *cobra.Command) error {
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		folders, err := st.Groups(ctx)
		if err != nil {
			return err
		}
		targets, err := st.RouteTargets(ctx)
		if err != nil {
			return err
		}
		rows := make([]groupRow, 0, len(folders))
		for _, f := range folders {
			rows = append(rows, groupRow{Folder: f, Tier: groups.Tier(f, a.cfg.OperatorFolder), Parent: f.Parent(), Routes: targets[f]})
		}
		return a.emit(rows, func(w io.Writer) {
			fmt.Fprintln(w, "FOLDER\tTIER\tROUTES")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%d\t%d\n", r.Folder, r.Tier, r.Routes)
			}
		})
	})
}

func (a *app) groupRemove(cmd *cobra.Command, name string) error {
	folder, err := groups.ParseFolder(name)
	if err != nil {
		return usageError{err: err}
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		if folder == a.cfg.OperatorFolder {
			return fmt.Errorf("group rm %s: it is the operator folder (operator_folder in the config) and cannot be removed", folder)
		}
		all, err := st.Groups(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(all, folder) {
			return fmt.Errorf("group rm %s: no such group (see switchboard group list)", folder)
		}
		var children []string
		for _, g := range all {
			if g != folder && folder.Contains(g) {
				children = append(children, string(g))
			}
		}
		if len(children) > 0 {
			return fmt.Errorf("group rm %s: it has subgroups (%s); remove them first", folder, strings.Join(children, ", "))
		}
		routes, err := st.ListRoutes(ctx)
		if err != nil {
			return err
		}
		var ids []string
		for _, r := range routes {
			if r.Target == folder {
				ids = append(ids, fmt.Sprint(r.ID))
			}
		}
		if len(ids) > 0 {
			return fmt.Errorf("group rm %s: routes %s still point at it; remove them first (switchboard route rm ID)", folder, strings.Join(ids, ", "))
		}
		// A task left scheduled in a removed group would fail every run.
		tasks, err := st.Tasks(ctx, folder, false)
		if err != nil {
			return err
		}
		ids = ids[:0]
		for _, t := range tasks {
			if t.Status == scheduler.StatusActive || t.Status == scheduler.StatusPaused {
				ids = append(ids, fmt.Sprint(t.ID))
			}
		}
		switch len(ids) {
		case 0:
		case 1:
			return fmt.Errorf("group rm %s: task %s is scheduled in it; cancel it first (switchboard task cancel %s)", folder, ids[0], ids[0])
		default:
			return fmt.Errorf("group rm %s: tasks %s are scheduled in it; cancel them first (switchboard task cancel ID)", folder, strings.Join(ids, ", "))
		}
		dropped, err := st.RemoveGroup(ctx, folder)
		if err != nil {
			return err
		}
		dir := groups.Layout{DataDir: a.cfg.DataDir}.Dir(folder)
		return a.emit(map[string]any{"removed": folder, "kept_dir": dir, "dropped_work": dropped}, func(w io.Writer) {
			fmt.Fprintf(w, "removed group %s; its files are kept in %s\n", folder, dir)
			if dropped > 0 {
				fmt.Fprintf(w, "dropped %d queued work item(s) no turn had taken: the messages stay stored, no turn of %s runs\n", dropped, folder)
			}
		})
	})
}
