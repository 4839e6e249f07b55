package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/internal/testenv"
)

// sb runs the CLI in-process against dataDir and returns stdout, stderr and the error.
func sb(t *testing.T, dataDir string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--data-dir", dataDir}, args...)
	err := run(context.Background(), full, env(nil), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

func mustSB(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	out, _, err := sb(t, dataDir, args...)
	if err != nil {
		t.Fatalf("switchboard %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func TestGroupLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	out := mustSB(t, dir, "group", "add", "acme")
	if !strings.Contains(out, "added group acme (tier 1)") {
		t.Errorf("group add output: %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "groups", "acme", ".mcp.json")); err != nil {
		t.Errorf("group folder not set up: %v", err)
	}
	mustSB(t, dir, "group", "add", "acme/eng", "--jid", "web:eng")
	if _, _, err := sb(t, dir, "group", "add", "acme"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate add: %v", err)
	}
	// A group whose parent is missing is added (its tier is its depth's),
	// with a warning naming the parent, as a config seed does.
	if out, _, err := sb(t, dir, "group", "add", "nope/child/leaf"); err != nil || !strings.Contains(out, "added group nope/child/leaf (tier 3)") ||
		!strings.Contains(out, "warning: its parent group nope/child does not exist") || !strings.Contains(out, "switchboard group add nope/child") {
		t.Errorf("orphan add: %v\n%s", err, out)
	}
	if out := mustSB(t, dir, "grants", "show", "nope/child/leaf"); !strings.Contains(out, "tier 3") {
		t.Errorf("grants show of the orphan:\n%s", out)
	}
	mustSB(t, dir, "group", "rm", "nope/child/leaf")
	if _, _, err := sb(t, dir, "group", "add", "Bad!"); !isUsage(err) {
		t.Errorf("invalid folder should be a usage error, got %v", err)
	}
	var rows []groupRow
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "group", "list")), &rows); err != nil {
		t.Fatal(err)
	}
	tiers := map[string]int{}
	for _, r := range rows {
		tiers[string(r.Folder)] = r.Tier
	}
	if tiers["acme"] != 1 || tiers["acme/eng"] != 2 {
		t.Errorf("tiers = %v", tiers)
	}
	// acme has a child; acme/eng has a route.
	if _, _, err := sb(t, dir, "group", "rm", "acme"); err == nil || !strings.Contains(err.Error(), "subgroups (acme/eng)") {
		t.Errorf("rm parent: %v", err)
	}
	if _, _, err := sb(t, dir, "group", "rm", "acme/eng"); err == nil || !strings.Contains(err.Error(), "still point at it") {
		t.Errorf("rm routed group: %v", err)
	}
	mustSB(t, dir, "route", "rm", "1")
	// Nor while a task is still scheduled in it: removed, it failed every
	// run ("group acme/eng no longer exists") and stayed listed as active.
	mustSB(t, dir, "task", "add", "--folder", "acme/eng", "--jid", "web:eng", "--schedule", "@daily", "--prompt", "x")
	mustSB(t, dir, "task", "add", "--folder", "acme/eng", "--jid", "web:eng", "--schedule", "@hourly", "--prompt", "y")
	mustSB(t, dir, "task", "pause", "2")
	if _, _, err := sb(t, dir, "group", "rm", "acme/eng"); err == nil || !strings.Contains(err.Error(), "tasks 1, 2 are scheduled in it; cancel them first (switchboard task cancel ID)") {
		t.Errorf("rm group with tasks: %v", err)
	}
	mustSB(t, dir, "task", "cancel", "1")
	if _, _, err := sb(t, dir, "group", "rm", "acme/eng"); err == nil || !strings.Contains(err.Error(), "task 2 is scheduled in it; cancel it first (switchboard task cancel 2)") {
		t.Errorf("rm group with one task: %v", err)
	}
	mustSB(t, dir, "task", "cancel", "2")
	out = mustSB(t, dir, "group", "rm", "acme/eng")
	if !strings.Contains(out, "files are kept") {
		t.Errorf("rm output: %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "groups", "acme", "eng")); err != nil {
		t.Error("group rm deleted the folder's files")
	}
}

// "*" does not cross "/": a route that can match nothing a person means by
// it (any sender, any Telegram chat) is added, with a warning that says
// what to write instead.
func TestRouteAddWarnsWhenStarCannotCrossSlash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "ops")
	for _, c := range []struct {
		match []string
		want  string
	}{
		{[]string{"sender=*"}, "matches no sender"},
		{[]string{"chat_jid=telegram:*"}, "matches no telegram chat"},
		{[]string{"platform=slack", "room=*"}, "matches no slack chat"},
		{[]string{"sender=web:user/*"}, ""},
		{[]string{"chat_jid=telegram:**"}, ""},
		{[]string{"chat_jid=web:*"}, ""},
	} {
		out := mustSB(t, dir, append([]string{"route", "add", "--target", "ops"}, c.match...)...)
		if got := strings.Contains(out, "warning: "); got != (c.want != "") || !strings.Contains(out, c.want) {
			t.Errorf("route add %s: %q; want warning %q", c.match, out, c.want)
		}
	}
}

// Telegram's chat id of a group is negative (-1001234567890 for a
// supergroup) and operators copy it; a chat JID holds it without the
// minus sign (CONTRACT §4). A route written with it, or with a kind no
// Telegram JID has, never matches: it is added, with a warning that says
// what to write.
func TestRouteAddWarnsOfTelegramIDsNoChatHas(t *testing.T) {
	for _, c := range []struct {
		match []string
		want  string
	}{
		{[]string{"chat_jid=telegram:group/-1001234567890"}, "warning: chat_jid glob \"telegram:group/-1001234567890\" matches no telegram chat: a chat JID holds the chat's id without its minus sign: write telegram:group/1001234567890 for Telegram's chat id -1001234567890"},
		{[]string{"platform=telegram", "room=group/-42*"}, "without its minus sign"},
		{[]string{"chat_jid=telegram:supergroup/1001234567890"}, "not supergroup/"},
		{[]string{"chat_jid=telegram:group/1001234567890"}, ""},
		{[]string{"chat_jid=telegram:user/*"}, ""},
		{[]string{"chat_jid=telegram:*/5"}, ""},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		mustSB(t, dir, "group", "add", "ops")
		out := mustSB(t, dir, append([]string{"route", "add", "--target", "ops"}, c.match...)...)
		if got := strings.Contains(out, "warning: "); got != (c.want != "") || !strings.Contains(out, c.want) {
			t.Errorf("route add %s: %q; want warning %q", c.match, out, c.want)
		}
	}
}

// group add --jid pins a route too: one Telegram's negative chat id
// names no chat, and it says so.
func TestGroupAddWarnsOfAPinNoChatHas(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	out := mustSB(t, dir, "group", "add", "ops", "--jid", "telegram:group/-1001234567890")
	if !strings.Contains(out, "added route 1") || !strings.Contains(out, "warning: chat_jid glob \"telegram:group/-1001234567890\" matches no telegram chat") {
		t.Errorf("group add --jid telegram:group/-1001234567890: %q; want the route, with a warning", out)
	}
	if out := mustSB(t, dir, "group", "add", "main", "--jid", "telegram:group/1001234567890"); strings.Contains(out, "warning") {
		t.Errorf("group add --jid telegram:group/1001234567890: %q; want no warning", out)
	}
}

func TestRouteAddListExplain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "group", "add", "ops")
	mustSB(t, dir, "route", "add", "--target", "main", "platform=web")
	out := mustSB(t, dir, "route", "add", "--target", "ops", "chat_jid=web:ops")
	if !strings.Contains(out, "warning: route 1") {
		t.Errorf("a shadowed route should warn, got %q", out)
	}
	mustSB(t, dir, "route", "add", "--target", "ops", "--seq", "-1", "chat_jid=web:ops2", "verb=mention")
	out = mustSB(t, dir, "route", "explain", "web:ops")
	if !strings.Contains(out, "route 1 wins") || !strings.Contains(out, "folder main") {
		t.Errorf("explain web:ops: %q", out)
	}
	out = mustSB(t, dir, "route", "explain", "web:ops2", "--verb", "message")
	if !strings.Contains(out, "route 3 (seq -1 -> ops)") || !strings.Contains(out, "verb") {
		t.Errorf("explain should say why route 3 lost: %q", out)
	}
	var ex map[string]any
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "route", "explain", "web:ops2", "--verb", "mention")), &ex); err != nil {
		t.Fatal(err)
	}
	if ex["folder"] != "ops" || ex["mode"] != "trigger" {
		t.Errorf("explain json: %v", ex)
	}
	for _, bad := range [][]string{
		{"route", "add", "platform=web"},                              // no target
		{"route", "add", "--target", "main"},                          // no match: not a silent catch-all
		{"route", "add", "--target", "main", "planet=mars"},           // unknown key
		{"route", "add", "--target", "main", "--mode", "loud", "a=b"}, // bad mode / key
		{"route", "add", "--target", "main", "platform"},              // not KEY=GLOB
		{"route", "rm", "abc"},
		{"route", "explain", "not a jid"},
		{"route", "explain", "web:ops", "--verb", "shout"},
		{"route", "explain", "web:ops", "--sender", "ann"},
	} {
		if _, _, err := sb(t, dir, bad...); !isUsage(err) {
			t.Errorf("%v: want usage error, got %v", bad, err)
		}
	}
	// A glob no message can match is refused, saying why, and nothing is
	// added: as owner of every chat, a route with a misspelt verb captured
	// their replies and tools while it never triggered a turn.
	for _, c := range []struct{ arg, want string }{
		{"verb=mentoin", `match key verb: glob "mentoin" matches neither message nor mention`},
		{"chat_jid=lobby", `match key chat_jid: glob "lobby" is not a JID`},
		{"platform=Web", `match key platform: glob "Web" has 'W'`},
	} {
		if _, _, err := sb(t, dir, "route", "add", "--target", "main", c.arg); !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("route add %s: want a usage error saying %q, got %v", c.arg, c.want, err)
		}
	}
	// A seq beyond ±1e9 (add_route's bound) is refused: at the lowest int,
	// the next group add --jid wrapped round to the highest seq and its
	// route, meant to go first, went last.
	for _, seq := range []string{"-9223372036854775808", "1000000001"} {
		if _, _, err := sb(t, dir, "route", "add", "--target", "main", "--seq", seq, "chat_jid=web:x"); !isUsage(err) || !strings.Contains(err.Error(), "route seq "+seq+": want an integer from -1000000000 to 1000000000") {
			t.Errorf("route add --seq %s: want a usage error, got %v", seq, err)
		}
	}
	if _, _, err := sb(t, dir, "route", "add", "--target", "ghost", "platform=web"); err == nil || !strings.Contains(err.Error(), "group ghost does not exist") {
		t.Errorf("route to missing group: %v", err)
	}
	if _, _, err := sb(t, dir, "route", "rm", "99"); err == nil || !strings.Contains(err.Error(), "no such route") {
		t.Errorf("rm missing route: %v", err)
	}
	var routes []map[string]any
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "route", "list")), &routes); err != nil || len(routes) != 3 {
		t.Fatalf("route list: %v %v", routes, err)
	}
	if routes[0]["id"].(float64) != 3 {
		t.Errorf("routes not in seq order: %v", routes)
	}
}

func TestGrantsShowSetCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "group", "add", "other")
	mustSB(t, dir, "group", "add", "main/team")
	mustSB(t, dir, "route", "add", "--target", "main", "chat_jid=web:lobby")
	mustSB(t, dir, "route", "add", "--target", "other", "chat_jid=web:elsewhere")

	out := mustSB(t, dir, "grants", "check", "main", "send", "jid=web:lobby")
	if !strings.HasPrefix(out, "allow\n") || !strings.Contains(out, `"send"`) {
		t.Errorf("check own chat: %q", out)
	}
	out = mustSB(t, dir, "grants", "check", "main", "send", "chat_jid=web:elsewhere")
	if !strings.HasPrefix(out, "deny\n") || !strings.Contains(out, "belongs to group other") {
		t.Errorf("check other group's chat: %q", out)
	}
	out = mustSB(t, dir, "grants", "check", "main/team", "add_route")
	if !strings.HasPrefix(out, "deny\n") {
		t.Errorf("tier 2 add_route: %q", out)
	}
	mustSB(t, dir, "grants", "set", "main", "!like", "send(jid=web:*)")
	out = mustSB(t, dir, "grants", "show", "main")
	_, visible, _ := strings.Cut(out, "tools it can see")
	if !strings.Contains(out, "overrides: !like send(jid=web:*)") || strings.Contains(visible, " like ") || !strings.Contains(visible, " send ") || !strings.Contains(out, "tier 1") {
		t.Errorf("show after set: %q", out)
	}
	out = mustSB(t, dir, "grants", "check", "main", "like", "jid=web:lobby")
	if !strings.HasPrefix(out, "deny\n") || !strings.Contains(out, "!like") {
		t.Errorf("check like after !like: %q", out)
	}
	if _, _, err := sb(t, dir, "grants", "set", "main", "send(jid="); !isUsage(err) || !strings.Contains(err.Error(), `missing ")"`) {
		t.Errorf("bad rule: %v", err)
	}
	// A rule that names no tool, or a param its tools never carry, matches
	// no call: "!sendd" meant to hide send left send allowed, and
	// "!send(chat=slack:*)" narrowed nothing. It is stored (an inert rule
	// matches nothing, CONTRACT §7), and the operator is warned.
	for _, c := range []struct{ rule, want string }{
		{"!sendd", `warning: rule "!sendd" matches no call: no tool is named sendd`},
		{"!snd*", `warning: rule "!snd*" matches no call: no tool's name matches snd*`},
		{"!send(chat=slack:*)", `warning: rule "!send(chat=slack:*)" matches no call: send has no param chat (its params: jid, text, topic)`},
		{"!*pin*(emoji=x)", `warning: rule "!*pin*(emoji=x)" matches no call: no tool matching *pin* has a param emoji`},
		// A JID glob no call's JID can match: calls carry valid JIDs only.
		{"!send(jid=Telegram:*)", `warning: rule "!send(jid=Telegram:*)" matches no call: jid glob "Telegram:*": a JID's platform (before the :) is lowercase letters and digits`},
		{"!send(jid=web:my lobby)", `warning: rule "!send(jid=web:my lobby)" matches no call: jid glob "web:my lobby" has ' ', which no JID has`},
		{"!send(jid=lobby)", `warning: rule "!send(jid=lobby)" matches no call: jid glob "lobby" is no JID`},
		{"!find_messages(sender=ann)", `warning: rule "!find_messages(sender=ann)" matches no call: sender glob "ann" is no JID`},
	} {
		out, _, err := sb(t, dir, "grants", "set", "main", "send", c.rule)
		if err != nil || !strings.Contains(out, c.want) || !strings.Contains(out, "set 2 override rule(s) on main") {
			t.Errorf("grants set %s: %v %q; want it set, with %q", c.rule, err, out, c.want)
		}
		if show := mustSB(t, dir, "grants", "show", "main"); !strings.Contains(show, c.rule) {
			t.Errorf("grants show after set %s: %q", c.rule, show)
		}
	}
	// grants check of a tool that does not exist, or with a param its calls
	// never carry, answers as the evaluator does (tier 0's "*" allows any
	// name) and warns that no call can be so.
	mustSB(t, dir, "group", "add", "root")
	for _, c := range []struct {
		args          []string
		verdict, want string
	}{
		{[]string{"root", "sendd"}, "allow", "warning: no tool is named sendd"},
		{[]string{"main", "send", "chat=web:lobby"}, "allow", "warning: send has no param chat (its params: jid, text, topic)"},
	} {
		out, _, err := sb(t, dir, append([]string{"grants", "check"}, c.args...)...)
		if err != nil || !strings.HasPrefix(out, c.verdict+"\n") || !strings.Contains(out, c.want) {
			t.Errorf("grants check %v: %v %q; want %s and %q", c.args, err, out, c.verdict, c.want)
		}
	}
	// A param no call can carry is a usage error saying which, as the
	// MCP server's is: an invalid JID, or a param given twice.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"main", "send", "jid="}, "param jid: invalid JID: empty"},
		{[]string{"main", "send", "chat_jid=web:my lobby"}, `param jid: invalid JID "web:my lobby": character ' ' is not allowed`},
		{[]string{"main", "find_messages", "sender=ann"}, `param sender: invalid JID "ann"`},
		{[]string{"main", "send", "jid=web:lobby", "chat_jid=web:elsewhere"}, "param jid is given twice"},
	} {
		if _, _, err := sb(t, dir, append([]string{"grants", "check"}, c.args...)...); !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("grants check %v: %v; want a usage error saying %q", c.args, err, c.want)
		}
	}
	// Params a call carries besides its schema's: a message's topic.
	mustSB(t, dir, "grants", "set", "main", "!like", "send(jid=web:*)", "!edit(topic=secret)", "like*(jid=web:*)")
	// The bad rules changed nothing.
	if out := mustSB(t, dir, "grants", "show", "main"); !strings.Contains(out, "overrides: !like send(jid=web:*)") {
		t.Errorf("a rejected set changed the overrides: %q", out)
	}
	mustSB(t, dir, "grants", "set", "main")
	if out := mustSB(t, dir, "grants", "show", "main"); !strings.Contains(out, "overrides: none") {
		t.Errorf("clear: %q", out)
	}
	if _, _, err := sb(t, dir, "grants", "show", "ghost"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("show missing group: %v", err)
	}
}

func TestUsageAndDataDirErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, _, err := sb(t, dir, "frobnicate"); !isUsage(err) {
		t.Errorf("unknown command: %v", err)
	}
	if _, _, err := sb(t, dir, "group", "list", "--nope"); !isUsage(err) {
		t.Errorf("unknown flag: %v", err)
	}
	for _, parent := range []string{"group", "route", "grants", "task", "messages"} {
		if _, _, err := sb(t, dir, parent, "frobnicate"); !isUsage(err) || !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
			t.Errorf("%s frobnicate: want a usage error, got %v", parent, err)
		}
		if out, _, err := sb(t, dir, parent); err != nil || !strings.Contains(out, "Available Commands") {
			t.Errorf("bare %s: want its help, got %v %q", parent, err, out)
		}
	}
	// A query FTS5 cannot parse is the user's input: exit 2, like a bad
	// schedule in task preview, with FTS5's reason.
	if _, _, err := sb(t, dir, "messages", "search", "AND"); !isUsage(err) || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("messages search AND: want a usage error naming the syntax error, got %v", err)
	}
	// CONTRACT §15: switchboard approvals [list|allow ID|deny ID]: the bare
	// command lists (it printed its help: requireSubcommand replaced its own
	// action); an unknown subcommand is still a usage error.
	if out, _, err := sb(t, dir, "approvals"); err != nil || !strings.HasPrefix(out, "ID") || !strings.Contains(out, "STATUS") {
		t.Errorf("bare approvals: want the list, got %v %q", err, out)
	}
	if _, _, err := sb(t, dir, "approvals", "frobnicate"); !isUsage(err) {
		t.Errorf("approvals frobnicate: want a usage error, got %v", err)
	}
	// A data dir whose parents are missing is created: TestDataDirParentsCreated.
	if _, _, err := sb(t, dir, "--config", "/nonexistent/sb.yaml", "group", "list"); err == nil || !strings.Contains(err.Error(), "read config") {
		t.Errorf("missing explicit config: %v", err)
	}
	out := mustSB(t, dir, "--help")
	for _, want := range []string{"route", "grants", "group", "run", "--data-dir"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestCorruptDatabaseIsReportedAndKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "switchboard.db")
	junk := bytes.Repeat([]byte("not a database "), 500)
	if err := os.WriteFile(db, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sb(t, dir, "group", "add", "x"); err == nil || !strings.Contains(err.Error(), "not a database") {
		t.Errorf("corrupt db: %v", err)
	}
	got, _ := os.ReadFile(db)
	if !bytes.Equal(got, junk) {
		t.Error("the corrupt file was modified")
	}
}

// The data directory is private: created 0700, and a world-readable one
// from an older version is tightened by the next command.
func TestDataDirIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mustSB(t, dir, "group", "add", "acme")
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
}

// TestCLIWithoutPlatformTokens: with every platform enabled and no token in
// the environment (a fresh operator shell), the commands that only touch the
// database work; run refuses, naming each missing key.
func TestCLIWithoutPlatformTokens(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	cfg := filepath.Join(base, "switchboard.yaml")
	yaml := `adapters:
  telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}"}
  discord:  {enabled: true, token: "${DISCORD_BOT_TOKEN}"}
  slack:    {enabled: true, bot_token: "${SLACK_BOT_TOKEN}", app_token: "${SLACK_APP_TOKEN}"}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"group", "add", "main"}, {"route", "list"}, {"status"}} {
		if _, _, err := sb(t, dir, append([]string{"--config", cfg}, args...)...); err != nil {
			t.Errorf("switchboard %s without tokens: %v", strings.Join(args, " "), err)
		}
	}
	_, _, err := sb(t, dir, "--config", cfg, "run")
	for _, key := range []string{"adapters.telegram.token: empty", "adapters.discord.token: empty", "adapters.slack.bot_token: empty", "adapters.slack.app_token: empty"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("run without tokens: %v; want it to name %s", err, key)
		}
	}
}

// TestSendNeedsAnEnabledAdapter: send to a chat of a platform no adapter
// serves is refused at once, and nothing is queued (it printed "queued
// outbox item N", exited 0, and the item then failed in the outbox, where
// the operator did not look). One whose adapter this config does not
// enable is queued with a warning: the running gateway's config may
// enable it.
func TestSendNeedsAnEnabledAdapter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	_, _, err := sb(t, dir, "send", "matrix:room/1", "hello")
	if want := "send to matrix:room/1: no adapter serves the platform matrix (web, telegram, discord and slack do)"; err == nil || isUsage(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("send matrix:room/1: %v, want a failure saying %q", err, want)
	}
	if out := mustSB(t, dir, "status"); !strings.Contains(strings.Join(strings.Fields(out), " "), "outbox 0 pending, 0 failed") {
		t.Errorf("a refused send queued something:\n%s", out)
	}
	out := mustSB(t, dir, "send", "telegram:user/1", "hello")
	if want := "warning: the telegram adapter is not enabled in this config (adapters.telegram.enabled)"; !strings.Contains(out, "queued outbox item 1 for telegram:user/1") || !strings.Contains(out, want) {
		t.Errorf("send to telegram, not enabled here: %q; want it queued with %q", out, want)
	}
	if out := mustSB(t, dir, "send", "web:lobby", "hello"); !strings.Contains(out, "queued outbox item 2 for web:lobby") || strings.Contains(out, "warning") {
		t.Errorf("send to the web chat: %q", out)
	}
}

// TestSendAndInjectRefuseOversizeText: text over what is stored (64 KiB)
// is a usage error, as the send tool refuses it; send and inject cut it,
// marked "[truncated by switchboard]", and exited 0.
func TestSendAndInjectRefuseOversizeText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main", "--jid", "web:lobby")
	big := strings.Repeat("x", 64<<10+1)
	for _, cmd := range []string{"send", "inject"} {
		if _, _, err := sb(t, dir, cmd, "web:lobby", big); !isUsage(err) || !strings.Contains(err.Error(), "TEXT is 65537 bytes, at most 65536") {
			t.Errorf("%s of 65537 bytes: %v, want a usage error", cmd, err)
		}
	}
	if out := mustSB(t, dir, "status"); !strings.Contains(strings.Join(strings.Fields(out), " "), "outbox 0 pending, 0 failed") || !strings.Contains(out, "queue     empty") {
		t.Errorf("a refused send or inject stored something:\n%s", out)
	}
	mustSB(t, dir, "send", "web:lobby", big[1:]) // 64 KiB exactly
}

// TestSenderJIDErrors: a bad --sender is not called a chat JID, and the
// example shows a sender's form; it said `--sender: invalid chat JID "ann":
// want <platform>:<room>, e.g. web:lobby or telegram:group/123`.
func TestSenderJIDErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main", "--jid", "web:lobby")
	for _, args := range [][]string{
		{"inject", "web:lobby", "hi", "--sender", "ann"},
		{"route", "explain", "web:lobby", "--sender", "ann"},
	} {
		_, _, err := sb(t, dir, args...)
		if !isUsage(err) || strings.Contains(err.Error(), "chat JID") || !strings.Contains(err.Error(), `--sender: invalid JID "ann"`) || !strings.Contains(err.Error(), "web:user/ann") {
			t.Errorf("%v: %v, want a usage error about an invalid JID with a sender's example", args, err)
		}
	}
}

// TestVersionFlag: `switchboard --version` prints what `switchboard version`
// prints, in text and JSON; the bare command still prints its help.
func TestVersionFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, pre := range [][]string{nil, {"--json"}} {
		want := mustSB(t, dir, append(pre, "version")...)
		got := mustSB(t, dir, append(pre, "--version")...)
		if got != want || !strings.Contains(got, "dev") {
			t.Errorf("%v --version = %q, want %q", pre, got, want)
		}
	}
	if out := mustSB(t, dir); !strings.Contains(out, "Available Commands") {
		t.Errorf("bare switchboard: %q, want its help", out)
	}
	if _, _, err := sb(t, dir, "--version", "extra"); !isUsage(err) {
		t.Errorf("--version extra: %v, want a usage error", err)
	}
}

// grants check says what grants show lists: approve_tool is offered only
// while approvals.agent_tools is set.
func TestGrantsApproveToolFollowsAgentTools(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	out := mustSB(t, dir, "grants", "check", "main", "approve_tool")
	if !strings.HasPrefix(out, "deny\n") || !strings.Contains(out, "approvals.agent_tools is not set") {
		t.Errorf("check approve_tool without agent_tools: %q", out)
	}
	// Every line of grants show agrees: not in the tier defaults either,
	// nor in the JSON's defaults.
	if out := mustSB(t, dir, "grants", "show", "main"); strings.Contains(out, "approve_tool") {
		t.Errorf("show lists approve_tool without agent_tools: %q", out)
	}
	if out := mustSB(t, dir, "--json", "grants", "show", "main"); strings.Contains(out, "approve_tool") {
		t.Errorf("show --json lists approve_tool without agent_tools: %q", out)
	}
	cfg := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+dir+"\napprovals: {agent_tools: [Bash]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--config", cfg, "grants", "check", "main", "approve_tool"}, env(nil), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "allow\n") {
		t.Errorf("check approve_tool with agent_tools: %q", stdout.String())
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"--config", cfg, "grants", "show", "main"}, env(nil), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	defaults, seen, _ := strings.Cut(stdout.String(), "tools it can see")
	if !strings.Contains(seen, "approve_tool") || !strings.Contains(defaults, "approve_tool") {
		t.Errorf("show with agent_tools lacks approve_tool in the tier defaults or the tools it can see: %q", stdout.String())
	}
}

// An ask rule ('?') shows as such: grants check says "ask" for a call it
// decides, and grants show lists the tool as one that may ask an
// approver first (and still as one the group can see), but not a tool
// the ask rule does not name.
func TestGrantsShowCheckAsk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "route", "add", "--target", "main", "chat_jid=web:lobby")
	mustSB(t, dir, "route", "add", "--target", "main", "chat_jid=telegram:chat/1")
	mustSB(t, dir, "grants", "set", "main", "?send(jid=telegram:*)")
	if out := mustSB(t, dir, "grants", "check", "main", "send", "jid=telegram:chat/1"); !strings.HasPrefix(out, "ask\n") {
		t.Errorf("check a call the ask rule decides: %q; want ask", out)
	}
	if out := mustSB(t, dir, "grants", "check", "main", "send", "jid=web:lobby"); !strings.HasPrefix(out, "allow\n") {
		t.Errorf("check a call the ask rule does not match: %q; want allow", out)
	}
	out := mustSB(t, dir, "grants", "show", "main")
	_, asks, found := strings.Cut(out, "tools that may ask an approver first (1): ")
	if !found || !strings.HasPrefix(asks, "send\n") {
		t.Errorf("show does not list send, and only it, as asking first: %q", out)
	}
	if _, seen, _ := strings.Cut(out, "tools it can see"); !strings.Contains(seen, " send ") {
		t.Errorf("show no longer lists the asking tool as seen: %q", out)
	}
	mustSB(t, dir, "grants", "set", "main")
	if out := mustSB(t, dir, "grants", "show", "main"); strings.Contains(out, "ask an approver") {
		t.Errorf("show lists asking tools without an ask rule: %q", out)
	}
}

// group rm drops what was queued for the group and not started (an
// injected message here, the gateway down): no turn of the removed group
// runs when the gateway starts; the message stays stored.
func TestGroupRmDropsQueuedWork(t *testing.T) {
	dir := t.TempDir()
	mustSB(t, dir, "group", "add", "gx", "--jid", "web:gx")
	mustSB(t, dir, "inject", "web:gx", "hello gx")
	if out := mustSB(t, dir, "status"); !strings.Contains(out, "gx 1") {
		t.Fatalf("status before rm:\n%s; want gx 1 queued", out)
	}
	mustSB(t, dir, "route", "rm", "1")
	if out := mustSB(t, dir, "group", "rm", "gx"); !strings.Contains(out, "dropped 1 queued work item(s)") {
		t.Errorf("group rm printed %q; want it to say the queued item was dropped", out)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "status")), &rep); err != nil || len(rep.Queue) != 0 {
		t.Errorf("queue after group rm: %v (%v); want empty", rep.Queue, err)
	}
	if out := mustSB(t, dir, "messages", "search", "gx", "--jid", "web:gx"); !strings.Contains(out, "hello") {
		t.Errorf("the injected message is gone: %q", out)
	}
}

// An approver must be a person: a chat's JID given as one (a Telegram
// group, a Slack channel) matches no sender, so nobody could ever decide
// the group's requests and each would wait for the timeout. The command
// refuses it, saying what a person's JID looks like. People of every
// platform, and JIDs of platforms it does not know, are taken.
func TestApproversArePeople(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "approvals", "approvers", "main", "telegram:user/42")
	for _, c := range []struct{ jid, want string }{
		{"discord:111/222", `"discord:111/222" is a chat, not a person: a person's JID is discord:user/<id>`},
		{"slack:T1/channel/C1", "slack:<team>/user/<id>"},
	} {
		_, _, err := sb(t, dir, "approvals", "approvers", "main", "web:user/ann", c.jid)
		if !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("approvers %s: want a usage error saying %q, got %v", c.jid, c.want, err)
		}
	}
	// telegram:group/<id> is how an anonymous admin of a group (or a
	// member posting as a channel) is a sender on Telegram: listed, their
	// "/approve" decides.
	mustSB(t, dir, "approvals", "approvers", "main", "web:user/ann", "slack:T1/user/U1", "discord:user/7", "matrix:room/x", "telegram:group/123")
}

// TestUsageErrorNamesTheCommand: a bad command line prints the usage of the
// command that was mistyped and points at its own --help (which lists its
// flags), not only at the root's.
func TestUsageErrorNamesTheCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing flag", []string{"route", "add", "platform=web"},
			[]string{"--target is required", "Usage: switchboard route add --target FOLDER", "Run 'switchboard route add --help'"}},
		{"too few args", []string{"grants", "check", "main"},
			[]string{"Usage: switchboard grants check FOLDER TOOL", "Run 'switchboard grants check --help'"}},
		{"unknown flag", []string{"task", "preview", "@daily", "--zone", "UTC"},
			[]string{"unknown flag: --zone", "Run 'switchboard task preview --help'"}},
		{"unknown subcommand", []string{"group", "frob"},
			[]string{`unknown command "frob"`, "Run 'switchboard group --help'"}},
		{"unknown command", []string{"frob"},
			[]string{`unknown command "frob"`, "Run 'switchboard --help'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := sb(t, dir, tc.args...)
			if !isUsage(err) {
				t.Fatalf("want a usage error (exit 2), got %v", err)
			}
			msg := usageMessage(err)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
		})
	}
	if msg := usageMessage(errors.New("open store: disk full")); msg != "switchboard: open store: disk full\n" {
		t.Errorf("a failure that is not a usage error: %q", msg)
	}
}

// TestUnusableDataDirSaysWhereItWasSet: a data directory that cannot be
// used (a file, or a path through one) is an error naming the path, where it
// was set (--data-dir or data_dir in which config) and how to choose another,
// for the CLI and for run alike.
func TestUnusableDataDirSaysWhereItWasSet(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sb.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(file, "data")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a file as --data-dir", []string{"--data-dir", file, "status"},
			[]string{"data dir " + file + " (from --data-dir)", "it is a file, not a directory", "--data-dir or data_dir in the config"}},
		{"under a file, from the config", []string{"--config", cfg, "group", "list"},
			[]string{"data dir " + filepath.Join(file, "data") + " (from data_dir in " + cfg + ")", "not a directory", "--data-dir or data_dir in the config"}},
		{"run", []string{"--config", cfg, "run"},
			[]string{"data dir " + filepath.Join(file, "data") + " (from data_dir in " + cfg + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), tc.args, env(nil), strings.NewReader(""), &out, &errb)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestListenerInUseNamesTheKey: `run` with an address another program holds
// stops with an error naming the config key to change, for the MCP HTTP
// endpoint and the embedded NATS server as for the web chat and admin.
func TestListenerInUseNamesTheKey(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	for _, tc := range []struct{ name, yaml, key string }{
		{"mcp.listen", "mcp: {listen: " + addr + "}\n", "mcp.listen"},
		{"nats.listen", "agent: {runner: nats}\nnats: {embedded: true, listen: " + addr + "}\n", "nats.listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "sb.yaml")
			yaml := "data_dir: " + filepath.Join(dir, "data") + "\nadapters: {web: {enabled: true, listen: 127.0.0.1:0}}\nadmin: {listen: ''}\n" + tc.yaml
			if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			err := run(context.Background(), []string{"--config", cfg, "run"}, env(nil), strings.NewReader(""), &out, &errb)
			if err == nil || !strings.Contains(err.Error(), tc.key+": ") || !strings.Contains(err.Error(), "address already in use") ||
				!strings.Contains(err.Error(), "change "+tc.key) {
				t.Errorf("run: %v", err)
			}
		})
	}
}

// TestStatusNamesTheDataDir: status says which data directory it read,
// absolute, so that a command run from another directory with a relative
// data_dir (the example's ./data), which reads a new, empty one, is seen
// for what it is.
func TestStatusNamesTheDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	out := mustSB(t, dir, "status")
	if !strings.Contains(out, "never started on this data directory (check data_dir / --data-dir") || !strings.Contains(out, "MB in "+dir) {
		t.Errorf("status does not name the data dir %s:\n%s", dir, out)
	}
	var rep struct {
		DataDir string `json:"data_dir"`
	}
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "status")), &rep); err != nil || rep.DataDir != dir {
		t.Errorf("status --json data_dir = %q (%v), want %q", rep.DataDir, err, dir)
	}
}

// TestRouteAddWarnsOfADuplicate: a route whose match an earlier route has
// already (added twice, or again after the first start seeded it) never
// matches anything; route add says so and names the earlier route. One
// tried first (a lower seq) gets no such warning.
func TestRouteAddWarnsOfADuplicate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "group", "add", "other")
	if out := mustSB(t, dir, "route", "add", "--target", "main", "platform=web"); strings.Contains(out, "warning") {
		t.Errorf("first route warned:\n%s", out)
	}
	out := mustSB(t, dir, "route", "add", "--target", "other", "platform=web")
	if !strings.Contains(out, "warning: route 1 (seq 0 -> main) has the same match and is tried first, so this one never matches") {
		t.Errorf("duplicate route: no warning naming route 1:\n%s", out)
	}
	if out := mustSB(t, dir, "route", "add", "--target", "other", "--seq", "-1", "platform=web"); strings.Contains(out, "warning") {
		t.Errorf("a route tried first warned:\n%s", out)
	}
}

// TestRouteAddReportsUnreadableRoutes: when the stored routes cannot be
// read back to check a new route against them (here a row whose match is
// not JSON), route add still adds it but says the check did not happen,
// instead of printing no warning as if the route were fine.
func TestRouteAddReportsUnreadableRoutes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	db, err := sql.Open("sqlite3", filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO routes (seq, match, target, created_ms) VALUES (0, 'not json', 'main', 0)`); err != nil {
		t.Fatal(err)
	}
	out := mustSB(t, dir, "route", "add", "--target", "main", "chat_jid=web:lobby")
	if !strings.Contains(out, "added route 2") || !strings.Contains(out, "warning: the routes could not be read to check route 2") || !strings.Contains(out, "decode match of route 1") {
		t.Errorf("route add over an unreadable route table:\n%s\nwant the route added and a warning that it was not checked, naming the error", out)
	}
}

// TestSendAndInjectRefuseEmptyText: an empty or blank TEXT is a bad command
// line (exit 2, with the command's usage), as an oversize one is; it was a
// failure (exit 1) worded by the store.
func TestSendAndInjectRefuseEmptyText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main", "--jid", "web:lobby")
	for _, cmd := range []string{"send", "inject"} {
		for _, text := range []string{"", "  \n"} {
			if _, _, err := sb(t, dir, cmd, "web:lobby", text); !isUsage(err) || !strings.Contains(err.Error(), "TEXT is empty") {
				t.Errorf("%s %q: %v, want a usage error", cmd, text, err)
			}
		}
	}
}

// TestChatArgumentsRefuseAPersonsJID: a sender's JID where a chat is meant
// (web:user/ann, discord:user/1, slack:T1/user/U1) is a usage error naming
// a chat's form. `send web:user/ann hi` printed "queued outbox item" and
// exited 0; the item then failed for good in the gateway (a web room has no
// '/'), and task add and group add --jid stored a task or a route that could
// never answer or match. telegram:user/<id> stays a chat (a private one).
func TestChatArgumentsRefuseAPersonsJID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main", "--jid", "web:lobby")
	for _, tc := range []struct {
		args []string
		form string
	}{
		{[]string{"send", "web:user/ann", "hi"}, "web:<room>"},
		{[]string{"send", "discord:user/42", "hi"}, "discord:dm/<channel id>"},
		{[]string{"send", "slack:T1/user/U1", "hi"}, "slack:<team>/dm/<id>"},
		{[]string{"inject", "web:user/ann", "hi"}, "web:<room>"},
		{[]string{"task", "add", "--folder", "main", "--jid", "web:user/ann", "--schedule", "@daily", "--prompt", "x"}, "web:<room>"},
		{[]string{"group", "add", "other", "--jid", "web:user/ann"}, "web:<room>"},
	} {
		_, _, err := sb(t, dir, tc.args...)
		if !isUsage(err) || !strings.Contains(err.Error(), "is a person, not a chat") || !strings.Contains(err.Error(), tc.form) {
			t.Errorf("%v: %v, want a usage error saying it is a person, with the form %s", tc.args, err, tc.form)
		}
	}
	out := mustSB(t, dir, "status")
	if s := strings.Join(strings.Fields(out), " "); !strings.Contains(s, "outbox 0 pending, 0 failed") || !strings.Contains(s, "queue empty") {
		t.Errorf("a refused command queued something:\n%s", out)
	}
	if out := mustSB(t, dir, "task", "list"); strings.Contains(out, "web:user/ann") {
		t.Errorf("a task for a person's JID was stored:\n%s", out)
	}
	if out := mustSB(t, dir, "group", "list"); strings.Contains(out, "other") {
		t.Errorf("group add --jid with a person's JID added the group:\n%s", out)
	}
	mustSB(t, dir, "send", "telegram:user/7", "hi") // a private chat: still a chat

	// And the other way round: inject --sender takes a person, not a chat
	// (it stored a message "from" web:lobby, shown as that sender).
	if _, _, err := sb(t, dir, "inject", "web:lobby", "hi", "--sender", "web:lobby"); !isUsage(err) || !strings.Contains(err.Error(), "is a chat, not a person") {
		t.Errorf("inject --sender web:lobby: %v, want a usage error saying it is a chat", err)
	}
	mustSB(t, dir, "inject", "web:lobby", "hi", "--sender", "web:user/zed")
}

// TestGroupAddWarnsOfATooLongSocketPath: a group whose MCP socket path is
// longer than a unix socket allows gets no socket, so its agent has no
// tools. group add said only "added group" and exited 0; the reason was in
// the gateway's log alone. It now warns, naming the path and the fix.
func TestGroupAddWarnsOfATooLongSocketPath(t *testing.T) {
	// A data dir whose socket for "short" is 100 bytes long: under the
	// limit (107 on Linux, 103 on BSDs), while the long folder's is over.
	tmp := t.TempDir()
	pad := 100 - len(tmp+"/"+"/data/ipc/short/mcp.sock")
	if pad < 1 {
		testenv.Unavailable(t, "temp dir %s is too long for this test", tmp)
	}
	dir := filepath.Join(tmp, strings.Repeat("d", pad), "data")
	out := mustSB(t, dir, "group", "add", "short")
	if strings.Contains(out, "warning") {
		t.Errorf("group add short: %q, want no warning", out)
	}
	out = mustSB(t, dir, "group", "add", "a-rather-long-team/with-a-long-child")
	if !strings.Contains(out, "added group a-rather-long-team/with-a-long-child") ||
		!strings.Contains(out, "warning: its agent gets no MCP tools") || !strings.Contains(out, "use a shorter data_dir") {
		t.Errorf("group add with a socket path over the limit: %q, want a warning saying its agent gets no tools", out)
	}
}

// TestBackupOfAnEmptyName: `switchboard backup ""` (an unset shell
// variable) is a usage error; it said "backup: <the current directory>
// already exists; choose a new file name", and exited 1.
func TestBackupOfAnEmptyName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	_, _, err := sb(t, dir, "backup", "")
	if !isUsage(err) || !strings.Contains(err.Error(), "FILE is empty") {
		t.Errorf("backup \"\": %v, want a usage error saying FILE is empty", err)
	}
}

// TestStatusNamesFailedDeliveries: status counted the outbox items given up
// on ("outbox 0 pending, 1 failed") without saying which chat or why, so an
// operator had nothing to act on but the gateway's log. It now lists the
// latest, newest first, in text and JSON.
func TestStatusNamesFailedDeliveries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var queued struct {
		ID int64 `json:"outbox_id"`
	}
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "send", "telegram:user/1", "hello")), &queued); err != nil {
		t.Fatal(err)
	}
	// What the gateway's outbox does with an item for a platform it does not serve.
	if err := openDB(t, dir).OutboxFailed(t.Context(), queued.ID, "no adapter for this platform is enabled: telegram"); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(mustSB(t, dir, "status")), " ")
	if !strings.Contains(out, "outbox 0 pending, 1 failed") || !strings.Contains(out, "failed deliveries") ||
		!strings.Contains(out, fmt.Sprintf("#%d telegram:user/1 no adapter for this platform is enabled: telegram", queued.ID)) {
		t.Errorf("status:\n%s\nwant the failed delivery's chat and reason", out)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "status")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.FailedDeliveries) != 1 || rep.FailedDeliveries[0].ChatJID != "telegram:user/1" || rep.FailedDeliveries[0].OutboxID != queued.ID ||
		!strings.Contains(rep.FailedDeliveries[0].Error, "no adapter for this platform") {
		t.Errorf("status --json failed_deliveries = %+v", rep.FailedDeliveries)
	}
}
