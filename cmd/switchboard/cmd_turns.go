package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/scheduler"
	"switchboard/store"
)

func (a *app) turnsCommand() *cobra.Command {
	var name, before string
	var limit int
	cmd := &cobra.Command{
		Use:   "turns",
		Short: "List recent agent turns with their outcome and what they cost",
		Long: `List the most recent agent turns, newest first: when, which group and chat,
the trigger, the outcome, and the cost and tokens the agent reported (Claude
Code's JSON, a usage trailer, or the MCP tool report_usage; "-" when it
reported nothing). Times are in the config's timezone, zone named.

A page holds --limit turns (at most 1000). When older turns exist, the last
line says how to get the next page: --before the ID of the page's last turn
(with --json that line goes to stderr, and the IDs are in the JSON).`,
		Example: `  switchboard turns --limit 100
  switchboard turns --limit 100 --before t-5f1c0a9e3b7d2c41`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var folder groups.Folder
			if name != "" {
				f, err := groups.ParseFolder(name)
				if err != nil {
					return usagef("--folder: %v", err)
				}
				folder = f
			}
			if limit < 1 || limit > store.MaxLimit {
				return usagef("--limit %d: want 1 to %d turns a page; page on with --before", limit, store.MaxLimit)
			}
			return a.withStore(cmd.Context(), func(st *store.Store) error {
				ts, more, err := st.TurnsPage(cmd.Context(), folder, before, limit)
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("--before %s: no turn has that id (see switchboard turns)", before)
				}
				if err != nil {
					return err
				}
				loc, err := scheduler.LoadZone(a.cfg.Timezone)
				if err != nil {
					loc = time.UTC
				}
				out := make([]turnLine, 0, len(ts))
				for _, t := range ts {
					l := newTurnLine(t)
					l.Started = l.Started.In(loc)
					out = append(out, l)
				}
				if err := a.emit(out, func(w io.Writer) { turnsText(w, out, a.cfg.Timezone) }); err != nil || !more {
					return err
				}
				next := fmt.Sprintf("switchboard turns --limit %d --before %s", limit, ts[len(ts)-1].ID)
				if folder != "" {
					next += " --folder " + string(folder)
				}
				w := a.stdout
				if a.jsonOut {
					w = a.stderr
				}
				_, err = fmt.Fprintf(w, "older turns: %s\n", next)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&name, "folder", "", "only this group's turns")
	cmd.Flags().IntVar(&limit, "limit", 20, "how many turns a page (1 to 1000)")
	cmd.Flags().StringVar(&before, "before", "", "the page older than this turn (its ID; the last line of a page names it)")
	return cmd
}

// turnLine is one turn as `switchboard turns` shows it.
type turnLine struct {
	ID                  string        `json:"id"`
	Folder              groups.Folder `json:"folder"`
	ChatJID             adapters.JID  `json:"chat_jid"`
	Trigger             string        `json:"trigger"`
	Status              string        `json:"status"`
	Started             time.Time     `json:"started"`
	DurationMS          int64         `json:"duration_ms"`
	CostUSD             float64       `json:"cost_usd"`
	InputTokens         int64         `json:"input_tokens"`
	OutputTokens        int64         `json:"output_tokens"`
	CacheCreationTokens int64         `json:"cache_creation_tokens"`
	CacheReadTokens     int64         `json:"cache_read_tokens"`
	NumTurns            int64         `json:"num_turns"`
	APIMS               int64         `json:"api_ms"`
	Error               string        `json:"error,omitempty"`
}

func newTurnLine(t store.Turn) turnLine {
	u := t.Usage
	return turnLine{ID: t.ID, Folder: t.Folder, ChatJID: t.ChatJID, Trigger: string(t.Trigger), Status: string(t.Status),
		Started: t.Started, DurationMS: t.Duration.Milliseconds(), CostUSD: u.CostUSD, InputTokens: u.InputTokens,
		OutputTokens: u.OutputTokens, CacheCreationTokens: u.CacheCreationTokens, CacheReadTokens: u.CacheReadTokens,
		NumTurns: u.NumTurns, APIMS: u.APIDuration.Milliseconds(), Error: t.Error}
}

// turnsText writes ts, their times in zone tz (config timezone), zone named.
func turnsText(w io.Writer, ts []turnLine, tz string) {
	if len(ts) == 0 {
		fmt.Fprintln(w, "no turns yet")
		return
	}
	fmt.Fprintln(w, "STARTED\tFOLDER\tCHAT\tTRIGGER\tSTATUS\tSECONDS\tCOST\tTOKENS IN/OUT/CACHE")
	for _, t := range ts {
		cost, tokens := "-", "-"
		if t.CostUSD > 0 {
			cost = usd(t.CostUSD)
		}
		if t.InputTokens+t.OutputTokens+t.CacheCreationTokens+t.CacheReadTokens > 0 {
			tokens = fmt.Sprintf("%d/%d/%d", t.InputTokens, t.OutputTokens, t.CacheCreationTokens+t.CacheReadTokens)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\n", inZone(t.Started, tz), t.Folder, t.ChatJID, t.Trigger,
			t.Status, float64(t.DurationMS)/1000, cost, tokens)
	}
}

// usd formats dollars: cents for sums, four decimals below a dollar.
func usd(f float64) string {
	if f >= 1 || f == 0 {
		return fmt.Sprintf("$%.2f", f)
	}
	return fmt.Sprintf("$%.4f", f)
}
