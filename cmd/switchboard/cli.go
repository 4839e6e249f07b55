package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"switchboard/config"
	"switchboard/store"
)

// usageError marks a bad command line (exit code 2). run fills in cmd: the
// command the line was for, whose usage main prints below the error.
type usageError struct {
	err error
	cmd *cobra.Command
}

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usageMessage is what main prints for a usage error: the error, the
// command's usage line, and where its help is ("switchboard route add
// --help", not the root's, which does not list route add's flags).
func usageMessage(err error) string {
	var u usageError
	if !errors.As(err, &u) {
		return "switchboard: " + err.Error() + "\n"
	}
	if u.cmd == nil {
		return "switchboard: " + err.Error() + "\nRun 'switchboard --help' for usage.\n"
	}
	if !u.cmd.Runnable() || u.cmd.HasSubCommands() {
		return fmt.Sprintf("switchboard: %v\nRun '%s --help' for usage.\n", err, u.cmd.CommandPath())
	}
	return fmt.Sprintf("switchboard: %v\nUsage: %s\nRun '%s --help' for more.\n", err, u.cmd.UseLine(), u.cmd.CommandPath())
}

func usagef(format string, args ...any) error { return usageError{err: fmt.Errorf(format, args...)} }

// app carries what every command needs: flags, config, output.
type app struct {
	getenv     func(string) string
	stdin      io.Reader
	stdout     io.Writer
	stderr     io.Writer
	configPath string
	dataDir    string
	jsonOut    bool

	cfg     config.Config
	cfgFrom string
	log     *slog.Logger
	// seeds: load reads the config's groups: and routes: too (run seeds
	// them); the other commands skip those lists (config.LoadSettings).
	seeds bool
}

// run is the whole program: main only maps its error to an exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	a := &app{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(stdin)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return nil
	}
	var ue usageError
	if errors.As(err, &ue) {
		if ue.cmd == nil {
			return usageError{err: err, cmd: cmd}
		}
		return err
	}
	if isCobraUsage(err) {
		return usageError{err: err, cmd: cmd}
	}
	return err
}

// isCobraUsage recognizes cobra's own command-line errors.
func isCobraUsage(err error) bool {
	var ue usageError
	if errors.As(err, &ue) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "required flag", "arg(s)", "bad flag syntax"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

const rootHelp = `Switchboard bridges Discord, Telegram, Slack and a local web chat to AI agents.

Inbound messages are stored, routed to a group folder, and answered by a turn
of the group's agent (any program that reads a prompt on stdin), which can also
use the group's MCP tools over a unix socket.

Start here:
  switchboard run                          start the gateway (web chat on 127.0.0.1:8420 by default)
  switchboard route explain web:lobby      where does this chat go, and why?
  switchboard grants show main             what may this group do?

Every command works whether or not the gateway is running; changes take
effect in a running gateway within 2 seconds.`

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "switchboard",
		Short:         "Chat-platform gateway for AI agents",
		Long:          rootHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "config file (default ./switchboard.yaml, else built-in defaults)")
	root.PersistentFlags().StringVar(&a.dataDir, "data-dir", "", "data directory (overrides data_dir in the config)")
	root.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output")
	var showVersion bool
	root.Flags().BoolVar(&showVersion, "version", false, "print the version (what switchboard version prints)")
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if showVersion {
			return a.printVersion()
		}
		return cmd.Help()
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err: err, cmd: c} })
	root.AddCommand(a.runCommand(), a.groupCommand(), a.routeCommand(), a.grantsCommand(), a.taskCommand(),
		a.sendCommand(), a.injectCommand(), a.messagesCommand(), a.mcpBridgeCommand(), a.demoAgentCommand(), a.versionCommand(),
		a.statusCommand(), a.backupCommand(), a.tokenCommand(), a.approvalsCommand(), a.turnsCommand(), a.budgetCommand(), a.workerCommand(), a.natsCommand())
	for _, c := range root.Commands() {
		if c.HasSubCommands() {
			requireSubcommand(c)
		}
	}
	return root
}

// requireSubcommand makes "switchboard group frobnicate" a usage error (exit 2)
// instead of cobra's default of printing help and exiting 0; the bare command
// still prints its help, unless it does something of its own (a bare
// "switchboard approvals" lists, as "approvals list" does).
func requireSubcommand(c *cobra.Command) {
	c.Args = cobra.NoArgs
	if c.RunE == nil {
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// load reads the config once and applies --data-dir.
func (a *app) load() error {
	if a.log != nil {
		return nil
	}
	read := config.LoadSettings
	if a.seeds {
		read = config.Load
	}
	cfg, from, err := read(a.configPath, a.getenv)
	if err != nil {
		return err
	}
	if a.dataDir != "" {
		cfg.DataDir = a.dataDir
	}
	a.cfg, a.cfgFrom = cfg, from
	a.log = newLogger(a.stderr, cfg.Log)
	return nil
}

func newLogger(w io.Writer, c config.LogConfig) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openStore opens <data_dir>/switchboard.db, creating the data directory
// (0700) when missing. Missing parents are created too, with a warning
// naming the first of them: a typo'd path shows in the log rather than
// stopping a first start (CONTRACT §3 asks nothing of the directory).
func (a *app) openStore(ctx context.Context) (*store.Store, error) {
	if err := a.load(); err != nil {
		return nil, err
	}
	dir := a.cfg.DataDir
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, a.dataDirError(errors.New("it is a file, not a directory"))
	} else if errors.Is(err, os.ErrNotExist) {
		top := filepath.Clean(dir)
		for p := filepath.Dir(top); p != top; p = filepath.Dir(p) {
			if _, err := os.Stat(p); err == nil {
				break
			}
			top = p
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, a.dataDirError(fmt.Errorf("create it: %w", err))
		}
		if top != filepath.Clean(dir) {
			a.log.Warn("created the data directory and its missing parents; check data_dir / --data-dir if this is not the path you meant",
				"data_dir", dir, "first_created", top)
		}
	} else if err != nil {
		return nil, a.dataDirError(err)
	} else if err := os.Chmod(dir, 0o700); err != nil {
		// Private data (messages, folders, sockets): tighten an existing one.
		return nil, a.dataDirError(fmt.Errorf("make it private (0700): %w", err))
	}
	return store.Open(ctx, filepath.Join(dir, "switchboard.db"))
}

// dataDirError says which data directory could not be used, where that
// path was set, and how to choose another.
func (a *app) dataDirError(err error) error {
	from := "data_dir in " + cmp.Or(a.cfgFrom, "the built-in defaults")
	if a.dataDir != "" {
		from = "--data-dir"
	}
	return fmt.Errorf("data dir %s (from %s): %w; it must be a directory this user can write: fix the path, or set another with --data-dir or data_dir in the config", a.cfg.DataDir, from, err)
}

// withStore runs fn with an open store and closes it afterwards.
func (a *app) withStore(ctx context.Context, fn func(*store.Store) error) error {
	st, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

// emit prints v as JSON with --json, else calls text.
func (a *app) emit(v any, text func(w io.Writer)) error {
	if a.jsonOut {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	text(tw)
	return tw.Flush()
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.printVersion() },
	}
}

// printVersion is `switchboard version` and `switchboard --version`.
func (a *app) printVersion() error {
	v := buildVersion()
	return a.emit(v, func(w io.Writer) {
		fmt.Fprintf(w, "switchboard %s (commit %s, built %s, %s)\n", v["version"], v["commit"], cmp.Or(v["date"], "unknown"), v["go"])
	})
}

// Stamped by make release (-ldflags -X); empty in other builds.
var version, commit, date string

func buildVersion() map[string]string {
	v := map[string]string{"version": "dev", "commit": "unknown", "go": "unknown"}
	defer func() {
		for k, s := range map[string]string{"version": version, "commit": commit, "date": date} {
			if s != "" {
				v[k] = s
			}
		}
	}()
	if bi, ok := debug.ReadBuildInfo(); ok {
		v["go"] = bi.GoVersion
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v["version"] = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v["commit"] = s.Value[:12]
			}
		}
	}
	return v
}
