package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"switchboard/gateway"
	"switchboard/store"
)

func (a *app) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show adapters, queues, running turns, the outbox, next tasks and recent failures",
		Long: `Show what the gateway is doing, read from the database: each adapter's connection
state (since when, last error), work queued per folder, running turns, outbox
pending and failed, the next due tasks and the most recent failed turns. It works
whether or not the gateway runs, and says when the gateway was last seen.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), func(st *store.Store) error {
				rep, err := readStatus(cmd.Context(), st)
				if err != nil {
					return err
				}
				return a.emit(rep, rep.text)
			})
		},
	}
}

// statusReport is `switchboard status`, in text or JSON.
type statusReport struct {
	Gateway  gatewayState                     `json:"gateway"`
	Adapters map[string]gateway.AdapterStatus `json:"adapters"`
	Queue    map[string]int                   `json:"queue"`
	Running  []store.RunningTurn              `json:"running"`
	Outbox   struct {
		Pending int `json:"pending"`
		Failed  int `json:"failed"`
	} `json:"outbox"`
	NextTasks   []store.NextTask `json:"next_tasks"`
	FailedTurns []store.Turn     `json:"failed_turns"`
	DBBytes     int64            `json:"db_bytes"`
}

type gatewayState struct {
	Running  bool       `json:"running"`
	PID      int        `json:"pid,omitempty"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
	Warning  string     `json:"warning,omitempty"`
}

// aliveWithin: a heartbeat younger than this, from a live pid, is a running gateway.
const aliveWithin = 20 * time.Second

func readStatus(ctx context.Context, st *store.Store) (statusReport, error) {
	var rep statusReport
	rt, err := gateway.ReadRuntimeStatus(ctx, st)
	if err != nil {
		return rep, err
	}
	s, err := st.Status(ctx)
	if err != nil {
		return rep, err
	}
	rep.Adapters, rep.Queue, rep.Running = rt.Adapters, s.Queue, s.Running
	rep.Outbox.Pending, rep.Outbox.Failed = s.OutboxPending, s.OutboxFailed
	rep.NextTasks, rep.FailedTurns, rep.DBBytes = s.NextTasks, s.FailedTurns, s.DBBytes
	if h := rt.Heartbeat; h != nil {
		rep.Gateway.LastSeen, rep.Gateway.PID, rep.Gateway.Warning = &h.Time, h.PID, h.Warning
		rep.Gateway.Running = time.Since(h.Time) < aliveWithin && syscall.Kill(h.PID, 0) == nil
	}
	return rep, nil
}

func (r statusReport) text(w io.Writer) {
	switch g := r.Gateway; {
	case g.LastSeen == nil:
		fmt.Fprintln(w, "gateway\tnever started on this data directory")
	case g.Running:
		fmt.Fprintf(w, "gateway\trunning (pid %d, seen %s ago)\n", g.PID, time.Since(*g.LastSeen).Round(time.Second))
	default:
		fmt.Fprintf(w, "gateway\tnot running (last seen %s, %s ago)\n", g.LastSeen.Local().Format(time.DateTime), time.Since(*g.LastSeen).Round(time.Second))
	}
	if r.Gateway.Warning != "" {
		fmt.Fprintf(w, "WARNING\t%s\n", r.Gateway.Warning)
	}
	names := slices.Sorted(mapKeys(r.Adapters))
	for i, n := range names {
		s := r.Adapters[n]
		label := ""
		if i == 0 {
			label = "adapters"
		}
		line := fmt.Sprintf("%s\t%s\t%s since %s", label, n, s.State, s.Since.Local().Format(time.DateTime))
		if s.Err != "" {
			line += "\tlast error: " + s.Err
		}
		fmt.Fprintln(w, line)
	}
	var q []string
	for _, f := range slices.Sorted(mapKeys(r.Queue)) {
		q = append(q, fmt.Sprintf("%s %d", f, r.Queue[f]))
	}
	fmt.Fprintf(w, "queue\t%s\n", orDefault(strings.Join(q, ", "), "empty"))
	for i, t := range r.Running {
		label := ""
		if i == 0 {
			label = "running"
		}
		fmt.Fprintf(w, "%s\t%s\t%s since %s\n", label, t.Folder, t.ChatJID, t.Started.Local().Format(time.DateTime))
	}
	fmt.Fprintf(w, "outbox\t%d pending, %d failed\n", r.Outbox.Pending, r.Outbox.Failed)
	for i, t := range r.NextTasks {
		label := ""
		if i == 0 {
			label = "next tasks"
		}
		fmt.Fprintf(w, "%s\t#%d %s\t%s\t%s\n", label, t.ID, t.Folder, t.Spec, t.Next.Local().Format(time.DateTime))
	}
	for i, t := range r.FailedTurns {
		label := ""
		if i == 0 {
			label = "failed turns"
		}
		fmt.Fprintf(w, "%s\t%s %s\t%s attempt %d\t%s\n", label, time.UnixMilli(t.Started).Local().Format(time.DateTime), t.Folder, t.ChatJID, t.Attempt, t.Error)
	}
	fmt.Fprintf(w, "database\t%.1f MB\n", float64(r.DBBytes)/(1<<20))
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (a *app) backupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the database to FILE (safe while the gateway runs)",
		Long: `Write a consistent online copy of the database to FILE with SQLite's VACUUM INTO,
then verify it (it opens, passes the integrity check). FILE must not exist. Restore by
stopping the gateway and copying FILE over <data_dir>/switchboard.db (docs/deploy.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), func(st *store.Store) error {
				if err := st.Backup(cmd.Context(), args[0]); err != nil {
					return err
				}
				abs, _ := filepath.Abs(args[0])
				fi, _ := os.Stat(abs)
				return a.emit(map[string]any{"file": abs, "bytes": fi.Size()}, func(w io.Writer) {
					fmt.Fprintf(w, "backup written and verified: %s (%d bytes)\n", abs, fi.Size())
				})
			})
		},
	}
}
