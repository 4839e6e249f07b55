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
	"switchboard/store"
)

func (a *app) tokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Mint, list and revoke bearer tokens of the MCP HTTP endpoint (mcp.listen)",
		Long: `A token acts as one group on the MCP HTTP endpoint (mcp.listen), as a process
that can open the group's socket does: same tools, same grants. Every agent
turn gets its own token (SWITCHBOARD_MCP_TOKEN), revoked when the turn ends;
these commands mint long-lived ones for a group's owner, e.g. to connect an
MCP client on another machine with "switchboard mcp-bridge --url URL".

Only a token's SHA-256 is stored: "token add" prints the token once, and it
cannot be shown again. Lost? Remove it and mint another.`,
	}
	var ttl string
	add := &cobra.Command{
		Use:   "add FOLDER",
		Short: "Mint a token acting as FOLDER (printed once)",
		Example: `  switchboard token add acme --ttl 30d
  SWITCHBOARD_MCP_TOKEN=$(switchboard token add acme --ttl 12h) ...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.tokenAdd(cmd, args[0], ttl) },
	}
	add.Flags().StringVar(&ttl, "ttl", "30d", "how long the token is valid: a Go duration (12h, 90m) or days (30d)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tokens that have not expired (never their secrets)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.tokenList(cmd) },
	}
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "Revoke a token (its next request gets 401)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return a.tokenRemove(cmd, args[0]) },
	}
	cmd.AddCommand(add, list, rm)
	return cmd
}

// parseTTL reads a Go duration or a whole number of days ("30d").
func parseTTL(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		days, err = strconv.Atoi(n)
		d = time.Duration(days) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--ttl %q: want a positive duration such as 12h or 30d", s)
	}
	return d, nil
}

func (a *app) tokenAdd(cmd *cobra.Command, name, ttlFlag string) error {
	folder, err := groups.ParseFolder(name)
	if err != nil {
		return usageError{err: err}
	}
	ttl, err := parseTTL(ttlFlag)
	if err != nil {
		return usageError{err: err}
	}
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		ok, err := st.GroupExists(ctx, folder)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("token add %s: no such group (switchboard group list shows them)", folder)
		}
		secret, t, err := ops.MintToken(ctx, st, folder, "", ttl)
		if err != nil {
			return err
		}
		out := map[string]any{"id": t.ID, "folder": folder, "expires": t.Expires.UTC().Format(time.RFC3339), "token": secret}
		return a.emit(out, func(w io.Writer) {
			// The token alone on stdout, so that $(switchboard token add ...) captures it.
			fmt.Fprintln(w, secret)
			fmt.Fprintf(a.stderr, "token %s acts as group %s until %s; it is shown only this once\n", t.ID, folder, out["expires"])
			if a.cfg.MCP.Listen == "" {
				fmt.Fprintf(a.stderr, "note: mcp.listen is not set in %s, so this gateway serves no MCP HTTP endpoint for the token yet (docs/mcp.md)\n",
					cmp.Or(a.cfgFrom, "the built-in defaults"))
			}
		})
	})
}

type tokenRow struct {
	ID      string        `json:"id"`
	Folder  groups.Folder `json:"folder"`
	Turn    string        `json:"turn,omitempty"`
	Created string        `json:"created"`
	Expires string        `json:"expires"`
}

func (a *app) tokenList(cmd *cobra.Command) error {
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		ts, err := st.Tokens(ctx)
		if err != nil {
			return err
		}
		rows := make([]tokenRow, 0, len(ts))
		for _, t := range ts {
			rows = append(rows, tokenRow{ID: t.ID, Folder: t.Folder, Turn: t.TurnID,
				Created: t.Created.UTC().Format(time.RFC3339), Expires: t.Expires.UTC().Format(time.RFC3339)})
		}
		return a.emit(rows, func(w io.Writer) {
			fmt.Fprintln(w, "ID\tFOLDER\tTURN\tEXPIRES")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.ID, r.Folder, orDash(r.Turn), r.Expires)
			}
		})
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) tokenRemove(cmd *cobra.Command, id string) error {
	ctx := cmd.Context()
	return a.withStore(ctx, func(st *store.Store) error {
		if err := st.DeleteToken(ctx, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("token rm %s: no such token (switchboard token list shows them)", id)
			}
			return err
		}
		return a.emit(map[string]any{"id": id, "revoked": true}, func(w io.Writer) {
			fmt.Fprintf(w, "revoked token %s\n", id)
		})
	})
}
