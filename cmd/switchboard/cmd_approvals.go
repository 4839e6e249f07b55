package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/config"
	"switchboard/gateway"
	"switchboard/groups"
	"switchboard/store"
)

const approvalsHelp = `A grant rule that starts with ? (ask), e.g. '?send(jid=telegram:*)', makes
a call wait until one of the group's approvers decides: the gateway posts the
request in the turn's chat (or groups[].approvals.chat) with buttons Allow
once / Allow for this session / Deny, or as text where the platform has no
buttons; approvers answer with the buttons or with the messages
/approve ID, /approve ID session and /deny ID. Nobody deciding within
approvals.timeout (default 10m) denies the call; so does a group without
approvers, at once.

Approvers are JIDs of people: groups[].approvals.approvers in the config, or
"approvals approvers", which replaces the config's for that group; a
subgroup without its own has its parent's. The operator's CLI always may
decide ("approvals allow|deny").`

func (a *app) approvalsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Short: "List and decide approval requests of ask rules and approve_tool; set approvers",
		Long: approvalsHelp, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.approvalsList(cmd, 20) }}
	var limit int
	list := &cobra.Command{Use: "list", Short: "List the newest requests, pending or how they ended", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.approvalsList(cmd, limit) }}
	list.Flags().IntVar(&limit, "limit", 20, "how many requests to show, newest first")
	var session bool
	allow := &cobra.Command{Use: "allow ID", Short: "Allow a pending request (--session: that tool for the rest of the agent session)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			status := store.ApprovalAllowed
			if session {
				status = store.ApprovalSession
			}
			return a.approvalsDecide(cmd, args[0], status)
		}}
	allow.Flags().BoolVar(&session, "session", false, "allow the tool, any arguments, for the rest of the agent session")
	deny := &cobra.Command{Use: "deny ID", Short: "Deny a pending request", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.approvalsDecide(cmd, args[0], store.ApprovalDenied)
		}}
	approvers := &cobra.Command{Use: "approvers FOLDER [JID...]",
		Short: "Set who may decide a group's requests (no JIDs: back to the config's, or the parent's)",
		Example: `  switchboard approvals approvers main telegram:user/12345 web:user/ann
  switchboard approvals approvers main          # clear: groups[].approvals.approvers applies`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.approvalsApprovers(cmd, args[0], args[1:]) }}
	cmd.AddCommand(list, allow, deny, approvers)
	return cmd
}

type approvalRow struct {
	ID      string        `json:"id"`
	Folder  groups.Folder `json:"folder"`
	Tool    string        `json:"tool"`
	Args    string        `json:"args"`
	Status  string        `json:"status"`
	Decider string        `json:"decider,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Chat    string        `json:"chat,omitempty"`
	Created string        `json:"created"`
	Seconds float64       `json:"seconds_to_decide,omitempty"`
}

func approvalRowOf(ap store.Approval) approvalRow {
	r := approvalRow{ID: ap.ID, Folder: ap.Folder, Tool: ap.Tool, Args: ap.Args, Status: string(ap.Status), Decider: ap.Decider,
		Reason: ap.Reason, Chat: string(ap.Chat), Created: ap.Created.UTC().Format(time.RFC3339)}
	if !ap.Decided.IsZero() {
		r.Seconds = ap.Decided.Sub(ap.Created).Seconds()
	}
	return r
}

func (a *app) approvalsList(cmd *cobra.Command, limit int) error {
	if limit < 1 {
		return usagef("--limit %d: want 1 or more", limit)
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		all, err := st.Approvals(ctx, limit)
		if err != nil {
			return err
		}
		rows := make([]approvalRow, len(all))
		for i, ap := range all {
			rows[i] = approvalRowOf(ap)
		}
		return a.emit(rows, func(w io.Writer) {
			fmt.Fprintln(w, "ID\tFOLDER\tTOOL\tSTATUS\tDECIDER\tCREATED")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Folder, r.Tool, r.Status, orDash(r.Decider), r.Created)
			}
		})
	})
}

func (a *app) approvalsDecide(cmd *cobra.Command, id string, status store.ApprovalStatus) error {
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		ap, decided, err := st.DecideApproval(ctx, id, status, gateway.CLIDecider, "")
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("approvals: no request %s (switchboard approvals list shows them)", id)
		}
		if err != nil {
			return err
		}
		if !decided {
			return fmt.Errorf("approvals: request %s is no longer pending: it is %s (by %s)", id, ap.Status, orDash(ap.Decider))
		}
		return a.emit(approvalRowOf(ap), func(w io.Writer) {
			fmt.Fprintf(w, "request %s (%s, %s): %s; the running gateway sees it within a second\n", ap.ID, ap.Folder, ap.Tool, ap.Status)
		})
	})
}

func (a *app) approvalsApprovers(cmd *cobra.Command, name string, jids []string) error {
	folder, err := groups.ParseFolder(name)
	if err != nil {
		return usageError{err: err}
	}
	for _, j := range jids {
		if err := adapters.JID(j).Validate(); err != nil {
			return usagef("approver %q: want the JID of a person, e.g. telegram:user/12345 or web:user/ann (%v)", j, err)
		}
		if err := adapters.JID(j).CheckPerson(); err != nil {
			return usagef("approver %v (nobody could decide its requests)", err)
		}
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		if err := requireGroup(ctx, st, folder); err != nil {
			return err
		}
		if err := st.SetApprovers(ctx, folder, jids); err != nil {
			return err
		}
		return a.emit(map[string]any{"folder": folder, "approvers": nonNil(jids)}, func(w io.Writer) {
			if len(jids) == 0 {
				fmt.Fprintf(w, "cleared the approvers of %s: the config's (or the parent's) apply\n", folder)
			} else {
				fmt.Fprintf(w, "%d approver(s) of %s and its subgroups without their own\n", len(jids), folder)
			}
		})
	})
}

// gatewayApprovals hands the approvals settings to the gateway.
func gatewayApprovals(c config.Config) gateway.ApprovalOptions {
	o := gateway.ApprovalOptions{Timeout: time.Duration(c.Approvals.Timeout), AgentTools: c.Approvals.AgentTools,
		Groups: map[groups.Folder]gateway.GroupApprovals{}}
	for f, g := range c.GroupApprovalsOf() {
		ga := gateway.GroupApprovals{Chat: adapters.JID(g.Chat)}
		for _, j := range g.Approvers {
			ga.Approvers = append(ga.Approvers, adapters.JID(j))
		}
		o.Groups[f] = ga
	}
	return o
}
