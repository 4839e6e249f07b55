package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"switchboard/groups"
	"switchboard/ops"
	"switchboard/scheduler"
	"switchboard/store"
)

const taskHelp = `Scheduled tasks inject a prompt into a group folder as a "task" turn.

Schedules: a 5-field cron ("0 9 * * 1-5") or descriptor (@daily, @hourly),
an interval ("@every 15m" or "every 15m"), or an RFC 3339 instant for a
one-shot ("2026-12-24T18:00:00+01:00"). Cron is evaluated in the task's IANA
zone (--tz, default: timezone in the config); a time skipped by a DST jump
fires at the first instant after it, a repeated one fires once.

--missed says what happens to runs that fell due while the gateway was down:
skip (default) waits for the next slot, once runs one catch-up, all runs
every missed slot in order (at most 100).`

func (a *app) taskCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "Schedule prompts for autonomous turns", Long: taskHelp}
	var spec scheduler.TaskSpec
	var folder string
	add := &cobra.Command{
		Use:   "add --folder F --jid CHAT_JID --schedule SPEC --prompt TEXT [--tz ZONE] [--mode group|isolated] [--missed skip|once|all]",
		Short: "Add a task",
		Example: `  switchboard task add --folder main --jid web:lobby --schedule '0 9 * * 1-5' --tz Europe/Berlin --prompt 'Post the standup reminder'
  switchboard task add --folder main --jid web:lobby --schedule 'every 30m' --mode isolated --prompt 'Check the build'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec.Folder = groups.Folder(folder)
			return a.taskAdd(cmd, spec)
		},
	}
	f := add.Flags()
	f.StringVar(&folder, "folder", "", "group folder the turn runs in (required)")
	f.StringVar(&spec.ChatJID, "jid", "", "chat the turn answers in (required)")
	f.StringVar(&spec.Schedule, "schedule", "", "cron, @descriptor, interval or RFC 3339 instant (required)")
	f.StringVar(&spec.Prompt, "prompt", "", "what the agent should do (required)")
	f.StringVar(&spec.Timezone, "tz", "", "IANA time zone (default: the config's timezone)")
	f.StringVar(&spec.Context, "mode", "group", "group (the chat's session) or isolated (a fresh session each run)")
	f.StringVar(&spec.Missed, "missed", "skip", "skip, once or all")
	list := &cobra.Command{
		Use: "list", Short: "List tasks", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.taskList(cmd) },
	}
	cmd.AddCommand(add, list, a.taskStatusCommand("pause", scheduler.StatusPaused), a.taskStatusCommand("resume", scheduler.StatusActive),
		a.taskStatusCommand("cancel", scheduler.StatusCancelled), a.taskRunsCommand(), a.taskPreviewCommand())
	return cmd
}

func (a *app) taskAdd(cmd *cobra.Command, spec scheduler.TaskSpec) error {
	for name, v := range map[string]string{"--folder": string(spec.Folder), "--jid": spec.ChatJID, "--schedule": spec.Schedule, "--prompt": spec.Prompt} {
		if v == "" {
			return usagef("%s is required", name)
		}
	}
	if err := spec.Folder.Validate(); err != nil {
		return usagef("--folder: %w", err)
	}
	if _, err := parseChat(spec.ChatJID); err != nil {
		return usagef("--jid: %w", err)
	}
	spec.CreatedBy = "operator"
	// A bad schedule, zone, mode, policy or prompt is the command line's
	// fault: a usage error, checked before the store (ops.AddTask checks
	// the same again, with the group). The config gives the default zone.
	if err := a.load(); err != nil {
		return err
	}
	if _, err := scheduler.NewTask(spec, a.cfg.Timezone, time.Now()); err != nil {
		return taskAddError(err)
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		t, err := ops.AddTask(ctx, st, spec, a.cfg.Timezone)
		if err != nil {
			return taskAddError(err)
		}
		return a.emit(taskJSON(t), func(w io.Writer) {
			fmt.Fprintf(w, "added task %d: %s in %s, next run %s\n", t.ID, t.Spec, t.Timezone, inZone(t.NextRun(), t.Timezone))
		})
	})
}

// taskFlags are task add's flags by the scheduler.TaskSpec field they set.
var taskFlags = map[string]string{"prompt": "--prompt", "timezone": "--tz", "schedule": "--schedule", "context_mode": "--mode", "missed": "--missed"}

// taskAddError is task add's error for err from scheduler.NewTask or
// ops.AddTask: a refused flag's value is a usage error (exit 2, as task
// preview's) that names the flag; anything else (a group that does not
// exist) a failure.
func taskAddError(err error) error {
	var fe *scheduler.FieldError
	if !errors.As(err, &fe) || taskFlags[fe.Field] == "" {
		return fmt.Errorf("task add: %w", err)
	}
	var zp *scheduler.ZonePrefixError
	if errors.As(fe.Err, &zp) {
		return usageError{err: fmt.Errorf("task add: %w", cliScheduleError(fe.Err, "--schedule"))}
	}
	return usagef("%s: %w", taskFlags[fe.Field], fe.Err)
}

// cliScheduleError rewrites a schedule that embeds its zone (CRON_TZ=…)
// into the command line's terms: the zone goes in --tz. what names the
// argument that held the schedule. Other errors pass unchanged.
func cliScheduleError(err error, what string) error {
	var zp *scheduler.ZonePrefixError
	if !errors.As(err, &zp) {
		return err
	}
	fix := fmt.Sprintf("give the zone with --tz %s", cmp.Or(zp.Zone, "ZONE"))
	if zp.Rest != "" {
		fix = fmt.Sprintf("write %s %q --tz %s", what, zp.Rest, cmp.Or(zp.Zone, "ZONE"))
	}
	return fmt.Errorf("%w: %s %q: a zone prefix is not accepted; the zone goes in --tz (default: timezone in the config): %s",
		scheduler.ErrBadSchedule, what, zp.Spec, fix)
}

// inZone shows t as wall time in the task's zone, with the offset and the
// zone's name: "2026-11-25 09:00:00 +01:00 Europe/Berlin".
func inZone(t time.Time, tz string) string {
	if t.IsZero() {
		return "none"
	}
	if loc, err := scheduler.LoadZone(tz); err == nil {
		t = t.In(loc)
	}
	return t.Format("2006-01-02 15:04:05 -07:00") + " " + cmp.Or(tz, "UTC")
}

func taskJSON(t scheduler.Task) map[string]any {
	out := map[string]any{"id": t.ID, "folder": t.Folder, "chat_jid": t.ChatJID, "prompt": t.Prompt, "schedule": t.Spec,
		"kind": t.Kind, "timezone": t.Timezone, "context_mode": t.Context, "missed": t.Missed, "status": t.Status, "next_run": nil, "created_by": t.CreatedBy}
	if next := t.NextRun(); !next.IsZero() {
		out["next_run"] = next.Format(time.RFC3339)
	}
	return out
}

func (a *app) taskList(cmd *cobra.Command) error {
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		tasks, err := st.Tasks(ctx, "", false)
		if err != nil {
			return err
		}
		rows := make([]map[string]any, len(tasks))
		for i, t := range tasks {
			rows[i] = taskJSON(t)
		}
		return a.emit(rows, func(w io.Writer) {
			fmt.Fprintln(w, "ID\tSTATUS\tFOLDER\tCHAT\tSCHEDULE\tZONE\tNEXT RUN\tPROMPT")
			for _, t := range tasks {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Status, t.Folder, t.ChatJID, t.Spec, t.Timezone, inZone(t.NextRun(), t.Timezone), firstLine(t.Prompt))
			}
		})
	})
}

// parseID reads the ID argument of a route or task command.
func parseID(kind, arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%s id %q: want a positive number (see switchboard %s list)", kind, arg, kind)
	}
	return id, nil
}

func (a *app) taskStatusCommand(verb string, status scheduler.TaskStatus) *cobra.Command {
	return &cobra.Command{
		Use: verb + " ID", Short: map[string]string{"pause": "Pause a task (it keeps its schedule)", "resume": "Resume a paused task from its next slot",
			"cancel": "Cancel a task for good"}[verb],
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("task", args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withStore(ctx, func(st *store.Store) error {
				t, err := ops.SetTaskStatus(ctx, st, id, status)
				switch {
				case errors.Is(err, store.ErrNotFound):
					return fmt.Errorf("task %s %d: no such task (see switchboard task list)", verb, id)
				case err != nil:
					return fmt.Errorf("task %s: %w", verb, err)
				}
				return a.emit(taskJSON(t), func(w io.Writer) {
					fmt.Fprintf(w, "task %d is %s; next run %s\n", t.ID, t.Status, inZone(t.NextRun(), t.Timezone))
				})
			})
		},
	}
}

func (a *app) taskRunsCommand() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use: "runs ID", Short: "Show a task's run history, newest first", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("task", args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withStore(ctx, func(st *store.Store) error {
				t, err := st.Task(ctx, id)
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("task runs %d: no such task (see switchboard task list)", id)
				}
				if err != nil {
					return fmt.Errorf("task runs %d: %w", id, err)
				}
				runs, err := st.TaskRuns(ctx, id, limit)
				if err != nil {
					return err
				}
				rows := make([]map[string]any, len(runs))
				for i, r := range runs {
					rows[i] = map[string]any{"id": r.ID, "slot": r.Slot.Format(time.RFC3339), "status": r.Status,
						"started": r.Started.UTC().Format(time.RFC3339), "duration_ms": r.Duration.Milliseconds(), "turn_id": r.TurnID, "error": r.Error, "cost_usd": r.CostUSD}
				}
				return a.emit(rows, func(w io.Writer) {
					fmt.Fprintln(w, "RUN\tSLOT\tSTARTED\tSTATUS\tDURATION\tTURN\tCOST\tERROR")
					for _, r := range runs {
						cost := "-"
						if r.CostUSD > 0 {
							cost = usd(r.CostUSD)
						}
						// A catch-up run starts well after its slot.
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%dms\t%s\t%s\t%s\n", r.ID, inZone(r.Slot, t.Timezone), inZone(r.Started, t.Timezone),
							r.Status, r.Duration.Milliseconds(), r.TurnID, cost, r.Error)
					}
				})
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many runs")
	return cmd
}

func (a *app) taskPreviewCommand() *cobra.Command {
	var tz, from string
	var count int
	cmd := &cobra.Command{
		Use: "preview SPEC [--tz ZONE] [--count N] [--from DATE]", Short: "Show the next fire times of a schedule",
		Long: `Show the next fire times of a schedule, from now or from --from: a date
(YYYY-MM-DD, midnight in the zone) or an RFC 3339 instant. Slots at or after
--from are listed, so a daily schedule can be checked across a DST change.`,
		Example: `  switchboard task preview '30 2 * * *' --tz America/New_York --count 3
  switchboard task preview '30 2 * * *' --tz Europe/Berlin --from 2026-03-28 --count 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.load(); err != nil {
				return err
			}
			if count < 1 || count > scheduler.MaxPreview {
				return usagef("--count %d: want 1 to %d", count, scheduler.MaxPreview)
			}
			if tz == "" {
				tz = a.cfg.Timezone
			}
			s, err := scheduler.Parse(args[0], tz)
			if err != nil {
				return usageError{err: cliScheduleError(err, "SPEC")}
			}
			start, after := time.Now(), time.Now()
			if from != "" {
				if start, err = parseFrom(from, s.Location()); err != nil {
					return err
				}
				// Include a slot at start itself; an interval counts from it.
				after = start
				if s.Kind() != scheduler.KindInterval {
					after = start.Add(-time.Nanosecond)
				}
			}
			times, err := scheduler.Preview(args[0], tz, after, count)
			if err != nil {
				return usageError{err: cliScheduleError(err, "SPEC")}
			}
			out := make([]string, len(times))
			for i, t := range times {
				out[i] = t.Format(time.RFC3339)
			}
			return a.emit(map[string]any{"schedule": args[0], "timezone": tz, "from": start.In(s.Location()).Format(time.RFC3339), "next": out}, func(w io.Writer) {
				for _, t := range times {
					fmt.Fprintln(w, t.Format("2006-01-02 15:04:05 MST (Mon)"))
				}
			})
		},
	}
	cmd.Flags().StringVar(&tz, "tz", "", "IANA time zone (default: the config's timezone)")
	cmd.Flags().IntVar(&count, "count", 5, "how many (at most 100)")
	cmd.Flags().StringVar(&from, "from", "", "list slots from this date (YYYY-MM-DD in the zone) or RFC 3339 instant instead of now")
	return cmd
}

// parseFrom reads task preview's --from: a date (midnight in loc) or an
// RFC 3339 instant.
func parseFrom(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("--from %q: want a date such as 2026-10-24 (midnight in --tz) or an RFC 3339 instant such as 2026-10-24T09:00:00+02:00", s)
}

// firstLine is s's first line, cut at 200 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
