// Command scalegen makes a large Switchboard installation to measure with:
//
//	go run ./internal/scalegen/scalegen -dir /tmp/big -groups 10000 -chats 100000 -messages 10000000
//
// then `switchboard --config /tmp/big/switchboard.yaml run` (docs/scaling.md,
// "One machine"). -check then opens the database as the gateway does and
// checks it (scalegen.Check).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"switchboard/internal/scalegen"
)

func main() {
	var s scalegen.Spec
	var agent string
	var check bool
	flag.StringVar(&s.Dir, "dir", "", "directory to create: switchboard.yaml and data/ (required)")
	flag.IntVar(&s.Groups, "groups", 10000, "group folders")
	flag.IntVar(&s.Chats, "chats", 100000, "routed web chats (one route each)")
	flag.IntVar(&s.Messages, "messages", 0, "stored messages over the chats")
	flag.BoolVar(&s.SeedStore, "seeded", false, "write groups and routes into the database (as after a first start)")
	flag.BoolVar(&s.RoutesInConfig, "routes-in-config", true, "list the routes in switchboard.yaml")
	flag.StringVar(&s.WebListen, "web", "127.0.0.1:8420", "adapters.web.listen")
	flag.StringVar(&s.AdminListen, "admin", "127.0.0.1:8421", "admin.listen")
	flag.StringVar(&agent, "agent", "switchboard demo-agent", "agent.command, split on spaces")
	flag.IntVar(&s.MaxConcurrent, "max-concurrent", 4, "agent.max_concurrent")
	flag.BoolVar(&check, "check", false, "then open the database as the gateway does and check it (scalegen.Check: schema, integrity, full-text index, chats)")
	flag.Parse()
	if s.Dir == "" {
		fmt.Fprintln(os.Stderr, "scalegen: -dir is required")
		os.Exit(2)
	}
	s.AgentCommand = strings.Fields(agent)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ds, err := scalegen.Generate(ctx, s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("config %s\ndata_dir %s\ntook %s\n", ds.Config, ds.DataDir, ds.Took.Round(1e6))
	for _, p := range ds.Phases {
		fmt.Printf("  %-20s %8s (CPU %s)\n", p.Name, p.Took.Round(1e6), p.CPU.Round(1e6))
	}
	if check {
		start := time.Now()
		if err := scalegen.Check(ctx, ds.DataDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("check ok in %s\n", time.Since(start).Round(1e6))
	}
}
