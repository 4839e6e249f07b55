package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/adapters/discord"
	"switchboard/adapters/slack"
	"switchboard/adapters/telegram"
	"switchboard/adapters/web"
	"switchboard/agent"
	"switchboard/config"
	"switchboard/gateway"
	"switchboard/groups"
	"switchboard/remote"
	"switchboard/routing"
	"switchboard/store"
)

func (a *app) runCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Start the gateway (adapters, queue, agent turns, outbox)",
		Long: `Start the gateway: the enabled adapters, the message pipeline and the outbox.
Groups and routes from the config are seeded first (groups when missing, routes
once, when the database is new; later edits to routes: are not applied, and a
start whose config routes differ from the database's logs a warning: change
routes with switchboard route add / route rm). Stop with Ctrl-C or SIGTERM: intake stops, running
turns drain, then the store closes. A second Ctrl-C exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runGateway(cmd.Context()) },
	}
}

func (a *app) runGateway(ctx context.Context) error {
	a.seeds = true
	if err := a.load(); err != nil {
		return err
	}
	// Only run talks to the platforms: the other commands load the config
	// without its tokens.
	if err := a.cfg.ValidateSecrets(); err != nil {
		return fmt.Errorf("config %s: %w", cmp.Or(a.cfgFrom, "(built-in defaults)"), err)
	}
	st, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	unlock, err := lockDataDir(a.cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	if err := a.seed(ctx, st); err != nil {
		return err
	}
	// Seeded: nothing reads the lists again (but the groups' approvals,
	// taken here), and a hundred thousand decoded routes held tens of
	// megabytes for the process's life.
	approvals := gatewayApprovals(a.cfg)
	a.cfg.Groups, a.cfg.Routes = nil, nil
	adapterList, err := a.buildAdapters(st)
	if err != nil {
		return err
	}
	// With agent.runner nats, turns run on workers, which resolve and
	// sandbox the command: the spec is agent.* as configured.
	spec, err := a.agentSpec(ctx, exe)
	if err != nil {
		return err
	}
	runner, warning := agent.Runner(agent.Local{}), ""
	var workers func(context.Context) ([]remote.WorkerInfo, error)
	if a.cfg.Agent.Runner == "nats" {
		r, stop, err := a.natsRunner(ctx)
		if err != nil {
			return err
		}
		defer stop()
		runner, workers = r, r.Workers
		if a.cfg.MCP.Listen == "" {
			a.log.Warn("agent.runner is nats but mcp.listen is off: agents on workers have no MCP tools and can answer only on stdout")
		}
	} else {
		warning = sandboxWarning(spec.Sandbox)
	}
	g, err := gateway.New(gateway.Options{
		Store: st, Adapters: adapterList, Agent: spec, Price: a.cfg.Agent.Price.AgentPrice(), Runner: runner, DataDir: a.cfg.DataDir,
		Operator: a.cfg.OperatorFolder, EngageTTL: time.Duration(a.cfg.EngageTTL),
		MaxConcurrent: a.cfg.Agent.MaxConcurrent, Exe: exe, Timezone: a.cfg.Timezone, Logger: a.log,
		MaxDownload: int64(a.cfg.Adapters.MaxDownloadMB) << 20, Warning: warning,
		Limits: gatewayLimits(a.cfg.Limits), Streams: gatewayStreams(a.cfg.Adapters), Progress: a.cfg.Agent.Progress,
		Approvals: approvals,
		StopBy:    gateway.StopBy(a.cfg.Limits.StopBy), MidTurn: gateway.MidTurn(a.cfg.Agent.MidTurn),
		MCPHTTP: gateway.MCPHTTP{Listen: a.cfg.MCP.Listen, CertFile: a.cfg.MCP.TLSCert, KeyFile: a.cfg.MCP.TLSKey, URL: a.cfg.MCP.URL,
			// A sandbox without network cannot reach the endpoint: its agents keep the socket.
			PassToAgents: spec.Sandbox == nil || spec.Sandbox.Network},
	})
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(a.cfg.DataDir)
	a.log.Info("switchboard starting", "version", buildVersion()["version"], "config", cmp.Or(a.cfgFrom, "(built-in defaults)"),
		"data_dir", abs, "agent", a.cfg.Agent.Command, "max_concurrent", a.cfg.Agent.MaxConcurrent)
	// A second signal exits at once; the first one is ctx.
	go func() {
		<-ctx.Done()
		a.log.Info("shutting down; press Ctrl-C again to exit at once")
		second := make(chan os.Signal, 1)
		signal.Notify(second, os.Interrupt, syscall.SIGTERM)
		<-second
		a.log.Warn("second interrupt: exiting now")
		os.Exit(1)
	}()
	adm, err := startAdmin(a.cfg.Admin.Listen, g, st, workers, a.log)
	if err != nil {
		return err
	}
	err = g.Run(ctx)
	adm.stop()
	a.log.Info("switchboard stopped")
	return err
}

// seed creates the config's groups when missing and its routes once, at the
// first start of a new database; later, it warns when the config's routes
// and the database's differ.
func (a *app) seed(ctx context.Context, st *store.Store) error {
	folders := []groups.Folder{a.cfg.OperatorFolder}
	for _, g := range a.cfg.Groups {
		folders = append(folders, g.Folder)
	}
	if err := a.checkRouteTargets(ctx, st, folders); err != nil {
		return err
	}
	if err := a.warnOrphans(ctx, st, folders); err != nil {
		return err
	}
	created, err := st.EnsureGroups(ctx, folders)
	if err != nil {
		return fmt.Errorf("seed groups: %w", err)
	}
	if len(created) > 0 {
		// One line, however many: a generated config lists thousands.
		a.log.Info("groups created from config", "count", len(created), "folders", created[:min(len(created), 10)])
	}
	if err := a.seedMidTurn(ctx, st); err != nil {
		return err
	}
	if err := a.seedBudgets(ctx, st); err != nil {
		return err
	}
	if len(a.cfg.Routes) == 0 {
		return nil
	}
	rs := make([]routing.Route, 0, len(a.cfg.Routes))
	for _, r := range a.cfg.Routes {
		rs = append(rs, r.Route())
	}
	seeded, err := st.SeedRoutes(ctx, rs)
	if err != nil {
		return fmt.Errorf("seed routes: %w", err)
	}
	if seeded {
		a.log.Info("routes seeded from config", "count", len(rs))
		// As route add warns: a glob that matches no message it is meant for.
		for i, r := range rs {
			if w := routing.NeverMatchWarning(r.Match); w != "" {
				a.log.Warn(fmt.Sprintf("config routes[%d] matches nothing: %s; fix it with switchboard route rm / route add (routes: is seeded once)", i, w),
					"route", routing.FormatMatch(r.Match), "target", r.Target)
			}
		}
		return nil
	}
	inDB, err := st.ListRoutes(ctx)
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	if missing, differ := routesDiffer(rs, inDB); differ {
		a.log.Warn("the config's routes differ from the database's: config routes are only seeded into a new database, "+
			"so edits to routes: take no effect; see switchboard route list, and change routes with switchboard route add / route rm",
			"config_routes", len(rs), "database_routes", len(inDB), "route_add", missing,
			"silence", "set routes: [] in the config once the database holds the routes you want")
	}
	return nil
}

// checkRouteTargets refuses, before the routes are first seeded, a config
// route whose target is no group: neither listed under groups: (nor the
// operator folder) nor added already with switchboard group add. Once
// seeded, routes: is not read again, and its targets do not matter.
func (a *app) checkRouteTargets(ctx context.Context, st *store.Store, listed []groups.Folder) error {
	if len(a.cfg.Routes) == 0 {
		return nil
	}
	if seeded, err := st.RoutesSeeded(ctx); err != nil || seeded {
		return err
	}
	known := map[groups.Folder]bool{}
	for _, f := range listed {
		known[f] = true
	}
	var errs []error
	for i, r := range a.cfg.Routes {
		if known[r.Target] {
			continue
		}
		ok, err := st.GroupExists(ctx, r.Target)
		if err != nil {
			return err
		}
		if ok {
			known[r.Target] = true
			continue
		}
		errs = append(errs, fmt.Errorf("routes[%d].target: group %q is not listed under groups (nor added with switchboard group add)", i, r.Target))
	}
	if len(errs) > 0 {
		return fmt.Errorf("config %s: %w", cmp.Or(a.cfgFrom, "(built-in defaults)"), errors.Join(errs...))
	}
	return nil
}

// warnOrphans warns about each config group whose parent is neither in
// folders nor a group already (group add and register_group refuse such a
// group): it is seeded all the same, as the config says, but has no parent
// to escalate to until the operator adds one.
func (a *app) warnOrphans(ctx context.Context, st *store.Store, folders []groups.Folder) error {
	known := map[groups.Folder]bool{}
	for _, f := range folders {
		known[f] = true
	}
	var stored []groups.Folder
	for i, g := range a.cfg.Groups {
		p := g.Folder.Parent()
		if p == "" || known[p] {
			continue
		}
		if stored == nil {
			var err error
			if stored, err = st.Groups(ctx); err != nil {
				return fmt.Errorf("seed groups: %w", err)
			}
			for _, f := range stored {
				known[f] = true
			}
			if known[p] {
				continue
			}
		}
		a.log.Warn("config group has no parent group: it cannot escalate; list the parent under groups: or switchboard group add it",
			"config", cmp.Or(a.cfgFrom, "(built-in defaults)"), "entry", fmt.Sprintf("groups[%d]", i), "folder", g.Folder, "parent", p)
	}
	return nil
}

// routesDiffer compares the config's routes with the database's in the
// order they are tried (seq, then config order or id), on what decides
// routing: seq, match, target and mode. It also returns, for the config's
// routes the database lacks, the `switchboard route add` lines that add them.
func routesDiffer(cfg, db []routing.Route) (missing []string, differ bool) {
	key := func(r routing.Route) string {
		r = r.Normalize()
		return fmt.Sprintf("%d %s %s %s", r.Seq, r.Mode, r.Target, routing.FormatMatch(r.Match))
	}
	ordered := slices.Clone(cfg)
	slices.SortStableFunc(ordered, func(a, b routing.Route) int { return cmp.Compare(a.Seq, b.Seq) })
	have := map[string]bool{}
	for _, r := range db {
		have[key(r)] = true
	}
	differ = len(ordered) != len(db)
	for i, r := range ordered {
		if !differ && key(r) != key(db[i]) {
			differ = true
		}
		if !have[key(r)] {
			missing = append(missing, routeAddLine(r.Normalize()))
		}
	}
	return missing, differ
}

// routeAddLine is the command that adds r.
func routeAddLine(r routing.Route) string {
	line := "switchboard route add --target " + string(r.Target)
	if r.Seq != 0 {
		line += fmt.Sprintf(" --seq %d", r.Seq)
	}
	if r.Mode != routing.Trigger {
		line += " --mode " + string(r.Mode)
	}
	for _, k := range routing.MatchKeys {
		if v, ok := r.Match[k]; ok {
			line += " '" + strings.ReplaceAll(k+"="+v, "'", `'\''`) + "'"
		}
	}
	return line
}

// buildAdapters is the plain list of enabled adapters.
func (a *app) buildAdapters(st *store.Store) ([]adapters.Adapter, error) {
	var list []adapters.Adapter
	c := a.cfg.Adapters
	if c.Web.Enabled {
		list = append(list, web.New(web.Options{Listen: c.Web.Listen, History: gateway.History{Store: st}, Logger: a.log}))
	}
	if c.Telegram.Enabled {
		list = append(list, telegram.New(telegram.Options{Token: string(c.Telegram.Token), APIURL: c.Telegram.APIURL, Logger: a.log,
			WebhookURL: c.Telegram.WebhookURL, Listen: c.Telegram.Listen, Secret: string(c.Telegram.SecretToken)}))
	}
	if c.Discord.Enabled {
		list = append(list, discord.New(discord.Options{Token: string(c.Discord.Token), APIURL: c.Discord.APIURL, Logger: a.log}))
	}
	if c.Slack.Enabled {
		list = append(list, slack.New(slack.Options{BotToken: string(c.Slack.BotToken), AppToken: string(c.Slack.AppToken),
			Mode: c.Slack.Mode, SigningSecret: string(c.Slack.SigningSecret), Listen: c.Slack.Listen, APIURL: c.Slack.APIURL, Logger: a.log}))
	}
	if len(list) == 0 {
		return nil, errors.New("no adapter is enabled; enable adapters.web (or another adapter) in the config")
	}
	return list, nil
}

// gatewayLimits hands the limits section to the gateway.
func gatewayLimits(l config.LimitsConfig) gateway.Limits {
	return gateway.Limits{
		TurnsPerSender: gateway.Rate{Count: l.TurnsPerSender.Count, Window: time.Duration(l.TurnsPerSender.Window)},
		TurnsPerChat:   gateway.Rate{Count: l.TurnsPerChat.Count, Window: time.Duration(l.TurnsPerChat.Window)},
		MaxChain:       l.MaxChain,
	}
}

// gatewayStreams are the live-reply settings of adapters.<name>.stream and
// stream_interval, by platform.
func gatewayStreams(a config.AdaptersConfig) map[string]gateway.Stream {
	out := map[string]gateway.Stream{}
	for name, s := range a.Streams() {
		out[name] = gateway.Stream{Mode: gateway.StreamMode(s.Stream), Interval: time.Duration(s.StreamInterval)}
	}
	return out
}
