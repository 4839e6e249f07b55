package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/remote"
	"switchboard/scheduler"
	"switchboard/store"
)

func (a *app) statusCommand() *cobra.Command {
	var natsURL string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show adapters, queues, running turns, the outbox, next tasks and recent failures",
		Long: `Show what the gateway is doing, read from the database: each adapter's connection
state (since when, last error), work queued per folder, running turns, outbox
pending and failed (the latest failed deliveries: chat and why), the next due tasks and the most recent failed turns. It works
whether or not the gateway runs, and says when the gateway was last seen.
With agent.runner nats it also lists the live workers and their slots, asked
from NATS (nats.url, the embedded server's nats.listen, or --nats).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), func(st *store.Store) error {
				rep, err := readStatus(cmd.Context(), st)
				if err != nil {
					return err
				}
				if rep.Spend, err = a.spendReport(cmd.Context(), st); err != nil {
					return err
				}
				rep.Zone = a.cfg.Timezone
				rep.DataDir, _ = filepath.Abs(a.cfg.DataDir)
				if a.cfg.Agent.Runner == "nats" || natsURL != "" {
					rep.Workers, rep.WorkersErr = a.natsWorkers(cmd.Context(), natsURL)
				}
				return a.emit(rep, rep.text)
			})
		},
	}
	cmd.Flags().StringVar(&natsURL, "nats", "", "NATS URL to list workers from (default: nats.url, or nats.listen when nats.embedded)")
	return cmd
}

// statusReport is `switchboard status`, in text or JSON.
type statusReport struct {
	Gateway     gatewayState                 `json:"gateway"`
	Adapters    map[string]ops.AdapterStatus `json:"adapters"`
	Queue       map[groups.Folder]int        `json:"queue"` // trigger work waiting, per folder
	Running     []runningTurn                `json:"running"`
	Outbox      outboxCounts                 `json:"outbox"`
	NextTasks   []nextTask                   `json:"next_tasks"`
	FailedTurns []failedTurn                 `json:"failed_turns"`
	// FailedDeliveries are the outbox items given up on most recently
	// (the outbox's "failed" count), newest first.
	FailedDeliveries []failedDelivery `json:"failed_deliveries"`
	DBBytes          int64            `json:"db_bytes"`
	// DataDir is the data directory read, absolute: a relative data_dir
	// is taken from the working directory, not the config file's.
	DataDir string `json:"data_dir,omitempty"`
	// Spend per group today and this month (subtree figures) against its
	// caps, in Zone (config timezone).
	Spend      []ops.GroupSpend    `json:"spend"`
	Zone       string              `json:"zone,omitempty"`
	Workers    []remote.WorkerInfo `json:"workers,omitempty"`
	WorkersErr string              `json:"workers_error,omitempty"`
	// Approvals are the requests waiting for a person (switchboard
	// approvals), oldest first.
	Approvals []approvalRow `json:"approvals"`
}

type gatewayState struct {
	Running bool `json:"running"`
	// Stopped: the last gateway shut down cleanly. Neither running nor
	// stopped: it died (crash, kill -9, power loss).
	Stopped  bool       `json:"stopped"`
	PID      int        `json:"pid,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
	Warning  string     `json:"warning,omitempty"` // e.g. that agents are not sandboxed
}

type runningTurn struct {
	Folder  groups.Folder `json:"folder"`
	ChatJID adapters.JID  `json:"chat_jid"`
	Started time.Time     `json:"started"`
}

type outboxCounts struct {
	Pending int `json:"pending"`
	Failed  int `json:"failed"`
}

type nextTask struct {
	ID       int64         `json:"id"`
	Folder   groups.Folder `json:"folder"`
	Spec     string        `json:"schedule"`
	Timezone string        `json:"timezone"`
	Next     time.Time     `json:"next"` // in the task's zone: RFC 3339 with its offset
}

// At is when the task fires next, in its own zone, zone named.
func (t nextTask) At() string { return inZone(t.Next, t.Timezone) }

type failedDelivery struct {
	OutboxID int64         `json:"outbox_id"`
	Folder   groups.Folder `json:"folder,omitempty"` // the sender; "" for the operator
	ChatJID  adapters.JID  `json:"chat_jid"`
	Failed   time.Time     `json:"failed"`
	Error    string        `json:"error"`
}

type failedTurn struct {
	TurnID  string        `json:"turn_id"`
	Folder  groups.Folder `json:"folder"`
	ChatJID adapters.JID  `json:"chat_jid"`
	Trigger string        `json:"trigger"`
	Attempt int           `json:"attempt"`
	Started time.Time     `json:"started"`
	Error   string        `json:"error"`
}

// aliveWithin: a heartbeat younger than this, from a live pid, is a running
// gateway (it beats every 5 s).
const aliveWithin = 20 * time.Second

func readStatus(ctx context.Context, st *store.Store) (statusReport, error) {
	rep := statusReport{Running: []runningTurn{}, NextTasks: []nextTask{}, FailedTurns: []failedTurn{}, FailedDeliveries: []failedDelivery{}, Approvals: []approvalRow{}}
	rt, err := ops.ReadRuntimeStatus(ctx, st)
	if err != nil {
		return rep, err
	}
	s, err := st.Status(ctx)
	if err != nil {
		return rep, err
	}
	rep.Adapters, rep.Queue, rep.DBBytes = rt.Adapters, s.Waiting, s.DBBytes
	rep.Outbox = outboxCounts{Pending: s.OutboxPending, Failed: s.OutboxFailed}
	for _, r := range s.Running {
		rep.Running = append(rep.Running, runningTurn{Folder: r.Folder, ChatJID: r.ChatJID, Started: r.Started})
	}
	for _, t := range s.NextTasks {
		next := t.Next
		if loc, err := scheduler.LoadZone(t.Timezone); err == nil {
			next = next.In(loc)
		}
		rep.NextTasks = append(rep.NextTasks, nextTask{ID: t.ID, Folder: t.Folder, Spec: t.Spec, Timezone: t.Timezone, Next: next})
	}
	for _, t := range s.FailedTurns {
		rep.FailedTurns = append(rep.FailedTurns, failedTurn{TurnID: t.ID, Folder: t.Folder, ChatJID: t.ChatJID,
			Trigger: string(t.Trigger), Attempt: t.Attempt, Started: t.Started, Error: t.Error})
	}
	for _, d := range s.FailedDeliveries {
		rep.FailedDeliveries = append(rep.FailedDeliveries, failedDelivery{OutboxID: d.ID, Folder: d.Folder, ChatJID: d.ChatJID, Failed: d.Failed, Error: d.Error})
	}
	pending, err := st.PendingApprovals(ctx)
	if err != nil {
		return rep, err
	}
	for _, ap := range pending {
		rep.Approvals = append(rep.Approvals, approvalRowOf(ap))
	}
	if h := rt.Heartbeat; h != nil {
		g := &rep.Gateway
		g.LastSeen, g.PID, g.Warning, g.Stopped = &h.Time, h.PID, h.Warning, h.Stopped
		if !h.Started.IsZero() {
			g.Started = &h.Started
		}
		g.Running = !h.Stopped && time.Since(h.Time) < aliveWithin && processAlive(h.PID)
	}
	return rep, nil
}

// processAlive reports whether pid exists; EPERM (another user's process,
// e.g. the service user's, seen from an operator's shell) counts as alive.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (r statusReport) text(w io.Writer) {
	g := r.Gateway
	switch {
	case g.LastSeen == nil:
		fmt.Fprintln(w, "gateway\tnever started on this data directory (check data_dir / --data-dir if you expected one)")
	case g.Running:
		fmt.Fprintf(w, "gateway\trunning (pid %d, up %s, seen %s ago)\n", g.PID, since(g.Started), time.Since(*g.LastSeen).Round(time.Second))
	case g.Stopped:
		fmt.Fprintf(w, "gateway\tnot running: stopped cleanly at %s (%s ago)\n", g.LastSeen.Local().Format(time.DateTime), time.Since(*g.LastSeen).Round(time.Second))
	default:
		fmt.Fprintf(w, "gateway\tnot running (last seen %s, %s ago; it did not stop cleanly: crashed or killed, see the log)\n",
			g.LastSeen.Local().Format(time.DateTime), time.Since(*g.LastSeen).Round(time.Second))
	}
	if g.Warning != "" {
		fmt.Fprintf(w, "WARNING\t%s\n", g.Warning)
	}
	label := "adapters"
	if !g.Running && len(r.Adapters) > 0 {
		label = "adapters (as last seen)"
	}
	for _, n := range slices.Sorted(maps.Keys(r.Adapters)) {
		s := r.Adapters[n]
		line := fmt.Sprintf("%s\t%s\t%s since %s", label, n, s.State, s.Since.Local().Format(time.DateTime))
		if s.Err != "" {
			line += "\tlast error: " + s.Err
		}
		fmt.Fprintln(w, line)
		label = ""
	}
	var q []string
	for _, f := range slices.Sorted(maps.Keys(r.Queue)) {
		q = append(q, fmt.Sprintf("%s %d", f, r.Queue[f]))
	}
	fmt.Fprintf(w, "queue\t%s\n", cmp.Or(strings.Join(q, ", "), "empty"))
	label = "running"
	for _, t := range r.Running {
		fmt.Fprintf(w, "%s\t%s\t%s since %s\n", label, t.Folder, t.ChatJID, t.Started.Local().Format(time.DateTime))
		label = ""
	}
	if r.WorkersErr != "" {
		fmt.Fprintf(w, "workers\tunknown: %s\n", r.WorkersErr)
	} else if r.Workers != nil {
		label = "workers"
		for _, wi := range r.Workers {
			fmt.Fprintf(w, "%s\t%s\t%d/%d slots busy, host %s, up %s\n", label, wi.ID, wi.Busy, wi.Slots, wi.Host, since(&wi.Started))
			label = ""
		}
		if len(r.Workers) == 0 {
			fmt.Fprintln(w, "workers\tnone connected")
		}
	}
	label = "approvals"
	for _, ap := range r.Approvals {
		fmt.Fprintf(w, "%s\t%s %s\t%s\tpending since %s (switchboard approvals allow|deny %s)\n", label, ap.ID, ap.Folder, ap.Tool, ap.Created, ap.ID)
		label = ""
	}
	fmt.Fprintf(w, "outbox\t%d pending, %d failed\n", r.Outbox.Pending, r.Outbox.Failed)
	label = "next tasks"
	for _, t := range r.NextTasks {
		fmt.Fprintf(w, "%s\t#%d %s\t%s\t%s\n", label, t.ID, t.Folder, t.Spec, t.At())
		label = ""
	}
	label = "failed turns"
	for _, t := range r.FailedTurns {
		fmt.Fprintf(w, "%s\t%s %s\t%s attempt %d\t%s\n", label, t.Started.Local().Format(time.DateTime), t.Folder, t.ChatJID, t.Attempt, t.Error)
		label = ""
	}
	label = "failed deliveries"
	for _, d := range r.FailedDeliveries {
		fmt.Fprintf(w, "%s\t%s #%d %s\t%s\n", label, d.Failed.Local().Format(time.DateTime), d.OutboxID, d.ChatJID, d.Error)
		label = ""
	}
	label = "spend (" + r.Zone + ")"
	for _, g := range r.Spend {
		if g.TodayUSD == 0 && g.MonthUSD == 0 && g.DailyUSD == 0 && g.MonthlyUSD == 0 {
			continue
		}
		line := fmt.Sprintf("%s\t%s\ttoday %s of %s, month %s of %s", label, g.Folder, usd(g.TodayUSD), capText(g.DailyUSD), usd(g.MonthUSD), capText(g.MonthlyUSD))
		if g.Over() {
			line += "\t" + heldText(g)
		}
		fmt.Fprintln(w, line)
		label = ""
	}
	if r.DataDir != "" {
		fmt.Fprintf(w, "database\t%.1f MB in %s\n", float64(r.DBBytes)/(1<<20), r.DataDir)
	} else {
		fmt.Fprintf(w, "database\t%.1f MB\n", float64(r.DBBytes)/(1<<20))
	}
}

// since is how long ago t was, rounded to the second ("?" when unknown).
func since(t *time.Time) string {
	if t == nil {
		return "?"
	}
	return time.Since(*t).Round(time.Second).String()
}

// natsWorkers asks NATS for the live workers; the error is for the report.
func (a *app) natsWorkers(ctx context.Context, url string) ([]remote.WorkerInfo, string) {
	if url == "" {
		url = a.cfg.NATS.URL
	}
	if url == "" && a.cfg.NATS.Embedded {
		url = "nats://" + a.cfg.NATS.Listen
	}
	if url == "" {
		return nil, "no nats.url; pass --nats URL"
	}
	// The gateway's credentials: nats.creds, or the embedded server's.
	path := a.natsCreds()
	if path == "" {
		return nil, "no nats.creds: set it to the gateway's NATS credentials"
	}
	creds, err := remote.ReadCreds(path)
	if err != nil {
		return nil, "nats.creds: " + err.Error()
	}
	opts, err := creds.Options(a.cfg.NATS.TLSCA)
	if err != nil {
		return nil, err.Error()
	}
	nc, err := nats.Connect(url, append(opts, nats.Timeout(3*time.Second), nats.Name("switchboard status"))...)
	if err != nil {
		return nil, fmt.Sprintf("connect to NATS at %s: %v", redactURL(url), err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ws, err := remote.ListWorkers(ctx, nc)
	if err != nil {
		return nil, err.Error()
	}
	if ws == nil {
		ws = []remote.WorkerInfo{}
	}
	return ws, ""
}
