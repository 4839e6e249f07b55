package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchboard/config"
)

// TestRunWarnsWhenConfigRoutesDiffer: routes: is seeded into a new database
// only; a start whose config routes differ from the database's logs one
// warning that names route list / route add (and the route add line for
// what the config adds), and a start whose routes agree logs none.
func TestRunWarnsWhenConfigRoutesDiffer(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "list") // creates the data directory and database
	st := openDB(t, dir)
	const groups = "groups: [{folder: root}, {folder: main}, {folder: ops}]\n"
	// start seeds with cfg as the config and returns the warnings it logged.
	start := func(cfgYAML string) []map[string]any {
		t.Helper()
		cfg, err := config.Parse([]byte(groups+cfgYAML), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		a := &app{cfg: cfg, log: slog.New(slog.NewJSONHandler(&logs, nil))}
		if err := a.seed(ctx, st); err != nil {
			t.Fatal(err)
		}
		var warns []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["level"] == "WARN" {
				warns = append(warns, rec)
			}
		}
		return warns
	}
	web := "routes: [{match: {platform: web}, target: main}]\n"
	if w := start(web); len(w) != 0 {
		t.Errorf("first start (routes seeded): warnings %v", w)
	}
	if w := start(web); len(w) != 0 {
		t.Errorf("same routes again: warnings %v", w)
	}
	if w := start("routes: [{match: {platform: web}, target: main, mode: trigger, seq: 0}]\n"); len(w) != 0 {
		t.Errorf("the same route with its defaults spelled out: warnings %v", w)
	}
	if w := start("routes: []\n"); len(w) != 0 {
		t.Errorf("no routes in the config: warnings %v", w)
	}

	// The operator adds a route to the config after the first run, as
	// docs/slack.md used to say.
	edited := "routes: [{match: {platform: web}, target: main}, {match: {platform: slack, verb: mention}, target: ops, mode: observe, seq: 5}]\n"
	w := start(edited)
	if len(w) != 1 {
		t.Fatalf("edited config: %d warnings, want exactly one: %v", len(w), w)
	}
	msg, _ := w[0]["msg"].(string)
	for _, want := range []string{"switchboard route list", "switchboard route add", "only seeded into a new database"} {
		if !strings.Contains(msg, want) {
			t.Errorf("warning %q does not say %q", msg, want)
		}
	}
	add, _ := w[0]["route_add"].([]any)
	wantLine := "switchboard route add --target ops --seq 5 --mode observe 'platform=slack' 'verb=mention'"
	if len(add) != 1 || add[0] != wantLine {
		t.Errorf("route_add = %v, want [%s]", add, wantLine)
	}

	// Following the hint makes them agree.
	mustSB(t, dir, "route", "add", "--target", "ops", "--seq", "5", "--mode", "observe", "platform=slack", "verb=mention")
	if w := start(edited); len(w) != 0 {
		t.Errorf("after route add: warnings %v", w)
	}
	// The database changed behind an unchanged config.
	mustSB(t, dir, "route", "rm", "1")
	if w := start(edited); len(w) != 1 {
		t.Errorf("after route rm: %d warnings, want one: %v", len(w), w)
	}
}

// TestRunRefusesBudgetOfNoGroup: a config budget whose folder is no group
// (a typo: budgets: [{folder: mian, ...}]) stops the start naming
// budgets[i].folder, as budget set refuses it; it was stored without a
// word and listed nowhere, so the group the operator meant ran uncapped.
func TestRunRefusesBudgetOfNoGroup(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "ops") // a group made by the CLI counts too
	st := openDB(t, dir)
	seed := func(yaml string) error {
		t.Helper()
		cfg, err := config.Parse([]byte("groups: [{folder: root}, {folder: main}]\n"+yaml), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		a := &app{cfg: cfg, log: slog.New(slog.DiscardHandler)}
		return a.seed(ctx, st)
	}
	err := seed("budgets: [{folder: main, daily_usd: 5}, {folder: mian, daily_usd: 5}]\n")
	if err == nil || !strings.Contains(err.Error(), "budgets[1].folder: no group mian") {
		t.Fatalf("budget of no group: %v, want an error naming budgets[1].folder", err)
	}
	if out := mustSB(t, dir, "--json", "budget", "list"); strings.Contains(out, "mian") {
		t.Errorf("budget list after the refused start: %s", out)
	}
	if err := seed("budgets: [{folder: main, daily_usd: 5}, {folder: ops, monthly_usd: 50}]\n"); err != nil {
		t.Fatalf("budgets of groups from the config and the CLI: %v", err)
	}
	out := mustSB(t, dir, "budget", "list")
	for _, want := range []string{"main   $0.00  $5.00", "ops    $0.00  none       $0.00       $50.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("budget list %q lacks %q", out, want)
		}
	}
}

// TestSeedWarnsOfOrphanGroups: a group listed under groups: whose parent
// is neither listed nor a group already is seeded as the config says (as
// group add does, warning too), and the start warns, naming the entry and the
// parent; a parent listed after its child, or one the database has, is no
// orphan.
func TestSeedWarnsOfOrphanGroups(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "ops")
	st := openDB(t, dir)
	seed := func(yaml string) string {
		t.Helper()
		cfg, err := config.Parse([]byte(yaml), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		a := &app{cfg: cfg, log: slog.New(slog.NewTextHandler(&logs, nil))}
		if err := a.seed(ctx, st); err != nil {
			t.Fatalf("seed: %v", err)
		}
		return logs.String()
	}
	logs := seed("groups: [{folder: root}, {folder: main}, {folder: acme/eng}]\nroutes: []\n")
	if !strings.Contains(logs, "config group has no parent group") || !strings.Contains(logs, "entry=groups[2]") || !strings.Contains(logs, "parent=acme") {
		t.Errorf("seed with an orphan logged:\n%s", logs)
	}
	if gs, _ := st.Groups(ctx); !slices.Contains(gs, "acme/eng") || !slices.Contains(gs, "main") {
		t.Errorf("groups after the seed: %v; want acme/eng and main", gs)
	}
	if logs := seed("groups: [{folder: root}, {folder: b/eng}, {folder: b}, {folder: ops/oncall}]\nroutes: []\n"); strings.Contains(logs, "no parent") {
		t.Errorf("seed with parents warned:\n%s", logs)
	}
}

// TestRunWarnsOfConfigRoutesMatchingNothing: a config route whose glob
// cannot match the chats it names (chat_jid telegram:*, "*" not crossing
// the "/" every Telegram chat JID has) is warned of when routes: is seeded,
// as route add warns of it; a route that matches is not.
func TestRunWarnsOfConfigRoutesMatchingNothing(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "list")
	st := openDB(t, dir)
	cfg, err := config.Parse([]byte("groups: [{folder: main}]\nroutes: [{match: {chat_jid: \"telegram:*\"}, target: main}, {match: {chat_jid: \"telegram:**\"}, target: main, seq: 1}]\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a := &app{cfg: cfg, log: slog.New(slog.NewJSONHandler(&logs, nil))}
	if err := a.seed(ctx, st); err != nil {
		t.Fatal(err)
	}
	var warns []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["level"] == "WARN" {
			msg, _ := rec["msg"].(string)
			warns = append(warns, msg)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "routes[0]") || !strings.Contains(warns[0], "telegram:**") {
		t.Errorf("warnings %q; want one, for routes[0], suggesting telegram:**", warns)
	}
}
