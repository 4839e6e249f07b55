package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/config"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

func (a *app) sendCommand() *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use:   "send CHAT_JID TEXT",
		Short: "Send a message as the bot (through the outbox)",
		Long: `Queue a message in the outbox. A running gateway delivers it within about a
second; otherwise it is delivered when the gateway next starts. A chat whose
platform no adapter serves is refused; one whose adapter this config does not
enable is queued with a warning (the running gateway's config may enable it).`,
		Example: `  switchboard send web:lobby "maintenance at 18:00"`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			chat, err := parseChat(args[0])
			if err != nil {
				return usageError{err: err}
			}
			if err := checkText(args[1]); err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withStore(ctx, func(st *store.Store) error {
				// After withStore loaded the config. A platform no adapter
				// serves would only fail in the outbox. One this config does
				// not enable may be enabled in the running gateway's (this
				// command may read another config, or none): queued, with a
				// warning.
				p := chat.Platform()
				if !slices.Contains(config.Platforms, p) {
					return fmt.Errorf("send to %s: no adapter serves the platform %s (web, telegram, discord and slack do)", chat, p)
				}
				warning := ""
				if !a.cfg.Adapters.Enabled(p) {
					warning = fmt.Sprintf("the %s adapter is not enabled in this config (adapters.%s.enabled): the item fails unless the gateway's config enables it", p, p)
				}
				it, err := ops.QueueSend(ctx, st, ops.SendRequest{Chat: chat, Text: args[1], Topic: topic})
				if err != nil {
					return err
				}
				out := map[string]any{"outbox_id": it.ID, "key": it.Key, "status": it.Status}
				if warning != "" {
					out["warning"] = warning
				}
				return a.emit(out, func(w io.Writer) {
					fmt.Fprintf(w, "queued outbox item %d for %s\n", it.ID, args[0])
					if warning != "" {
						fmt.Fprintln(w, "warning: "+warning)
					}
				})
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "thread or forum topic to post into")
	return cmd
}

func (a *app) injectCommand() *cobra.Command {
	var sender string
	cmd := &cobra.Command{
		Use:   "inject CHAT_JID TEXT [--sender S]",
		Short: "Store a synthetic inbound message and run a turn of the chat's owner",
		Long: `Store a message in the chat as if it had arrived, and queue a turn of the
folder that owns the chat (trigger "inject"), whatever the route's mode.`,
		Example: `  switchboard inject web:lobby "summarize today's discussion"`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			chat, err := parseChat(args[0])
			if err != nil {
				return usageError{err: err}
			}
			if err := checkText(args[1]); err != nil {
				return err
			}
			var from adapters.JID
			if sender != "" {
				if from, err = adapters.ParseJID(sender); err != nil {
					return usagef("--sender: %w", err)
				}
				if err := from.CheckPerson(); err != nil {
					return usagef("--sender: %w", err)
				}
			}
			ctx := cmd.Context()
			return a.withStore(ctx, func(st *store.Store) error {
				t, err := routing.Load(ctx, st)
				if err != nil {
					return fmt.Errorf("route table: %w", err)
				}
				m, folder, err := ops.Inject(ctx, st, t, ops.InjectRequest{Chat: chat, Text: args[1], Sender: from})
				if err != nil {
					return err
				}
				return a.emit(map[string]any{"seq": m.Seq, "id": m.ID, "folder": folder}, func(w io.Writer) {
					fmt.Fprintf(w, "injected message %s (seq %d); folder %s will run a turn\n", m.ID, m.Seq, folder)
				})
			})
		},
	}
	cmd.Flags().StringVar(&sender, "sender", "", "sender JID (default switchboard:user/operator)")
	return cmd
}

// parseChat parses a CHAT_JID argument: a valid JID that names a chat, not
// a person (web:user/ann is ann, not a room: what is sent or scheduled
// there fails for good in the outbox).
func parseChat(s string) (adapters.JID, error) {
	chat, err := adapters.ParseJID(s)
	if err != nil {
		return "", err
	}
	if err := chat.CheckChat(); err != nil {
		return "", err
	}
	return chat, nil
}

// checkText refuses a TEXT argument longer than a stored message may be:
// the store would cut it.
func checkText(text string) error {
	if strings.TrimSpace(text) == "" {
		return usagef("TEXT is empty: give the message's text as the second argument")
	}
	if len(text) > store.MaxText {
		return usagef("TEXT is %d bytes, at most %d", len(text), store.MaxText)
	}
	return nil
}

func (a *app) messagesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "messages", Short: "Search stored messages"}
	var jid string
	var limit int
	search := &cobra.Command{
		Use:   "search QUERY [--jid CHAT_JID]",
		Short: "Full-text search (SQLite FTS5 syntax), best matches first",
		Example: `  switchboard messages search deploy
  switchboard messages search '"release notes" OR changelog' --jid web:lobby`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			opts := store.SearchOptions{Limit: limit}
			if jid != "" {
				chat, err := adapters.ParseJID(jid)
				if err != nil {
					return usagef("--jid: %w", err)
				}
				opts.ChatJIDs = []adapters.JID{chat}
			}
			return a.withStore(ctx, func(st *store.Store) error {
				hits, err := st.Search(ctx, args[0], opts)
				if errors.Is(err, store.ErrBadQuery) {
					return usageError{err: err} // the query is the user's input: exit 2
				}
				if err != nil {
					return err
				}
				rows := make([]map[string]any, 0, len(hits))
				for _, h := range hits {
					rows = append(rows, map[string]any{"seq": h.Seq, "chat_jid": h.ChatJID, "id": h.ID, "sender": h.Sender,
						"time": h.Time.UTC().Format(time.RFC3339), "snippet": h.Snippet, "text": h.Text})
				}
				return a.emit(rows, func(w io.Writer) {
					if len(hits) == 0 {
						fmt.Fprintln(w, "no matches")
					}
					for _, h := range hits {
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", h.Seq, h.ChatJID, h.Sender, h.Snippet)
					}
				})
			})
		},
	}
	search.Flags().StringVar(&jid, "jid", "", "only this chat")
	search.Flags().IntVar(&limit, "limit", 20, "at most this many results (max 200)")
	cmd.AddCommand(search)
	return cmd
}
