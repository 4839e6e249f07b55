package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLISkipsTheConfigLists: commands other than run do not read the
// config's groups: and routes: (a hundred thousand routes took seconds to
// decode at every command), so a bad route there stops run, with the error
// naming it, and not group list.
func TestCLISkipsTheConfigLists(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "switchboard.yaml")
	yaml := "data_dir: " + filepath.Join(dir, "data") + "\nadmin: {listen: \"\"}\nadapters: {web: {enabled: true, listen: \"127.0.0.1:0\"}}\n" +
		"groups:\n  - folder: root\n  - folder: main\nroutes:\n  - {match: {chat_jid: \"web:a\"}, target: main}\n  - {match: {chat_jid: \"web:b\"}, target: nowhere}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), append([]string{"--config", cfg}, args...), env(nil), strings.NewReader(""), &out, &errb)
		return out.String(), err
	}
	out, err := cli("group", "list")
	if err != nil || !strings.Contains(out, "FOLDER") {
		t.Errorf("group list with a bad route in the config: %v\n%s", err, out)
	}
	_, err = cli("run")
	if err == nil || !strings.Contains(err.Error(), `routes[1].target: group "nowhere" is not listed under groups`) {
		t.Errorf("run with a bad route in the config: %v, want the route named", err)
	}
}

// TestRunConfigRouteToAStoredGroup: CONTRACT §2 seeds groups: when missing
// ("CLI/MCP can add more") and routes: once, into an empty table. A config
// route whose target is not listed under groups: but was added with
// `switchboard group add` is seeded like any other; and once the routes
// were seeded, the config's routes: are not read again, so a target there
// that is no group any more does not stop the gateway from starting. Both
// were refused ("routes[0].target: group ... is not listed under groups").
// A target that is no group at all is still refused on a first start
// (TestCLISkipsTheConfigLists).
func TestRunConfigRouteToAStoredGroup(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	mustSB(t, data, "group", "add", "support")
	web := freeAddr(t)
	cfg := func(target string) string {
		return "data_dir: " + data + "\nadmin: {listen: \"\"}\nagent: {sandbox: none}\n" +
			"adapters: {web: {enabled: true, listen: \"" + web + "\"}}\n" +
			"groups:\n  - folder: root\n  - folder: main\nroutes:\n  - {match: {platform: web}, target: " + target + "}\n"
	}
	stop, _ := runInProcess(t, data, web, cfg("support"))
	stop()
	out := mustSB(t, data, "--json", "route", "list")
	if !strings.Contains(out, `"target":"support"`) && !strings.Contains(out, `"target": "support"`) {
		t.Errorf("routes after the first start: %s; want the config's route to support", out)
	}
	// The routes are seeded: a later config's target is not read.
	stop, logs := runInProcess(t, data, web, cfg("gone"))
	stop()
	if !strings.Contains(logs.String(), "the config's routes differ from the database's") {
		t.Errorf("no warning that the config's routes are not applied:\n%s", logs.String())
	}
}

// TestDataDirParentsCreated: CONTRACT §3 asks nothing of the data
// directory beforehand. A data_dir whose parent did not exist was refused
// ("parent directory ... does not exist") by every command, so a first
// `switchboard group add` or `run` on data_dir: ./state/switchboard failed;
// the directories are created (0700), with a warning naming them.
func TestDataDirParentsCreated(t *testing.T) {
	data := filepath.Join(t.TempDir(), "state", "sb", "data")
	_, stderr, err := sb(t, data, "group", "add", "acme")
	if err != nil {
		t.Fatalf("group add on a data dir whose parents are missing: %v", err)
	}
	if !strings.Contains(stderr, "created the data directory") || !strings.Contains(stderr, filepath.Dir(data)) {
		t.Errorf("stderr %q; want a warning naming the directories created", stderr)
	}
	for _, d := range []string{data, filepath.Dir(data), filepath.Dir(filepath.Dir(data))} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v; want a directory of mode 0700", d, err)
		}
	}
	if out := mustSB(t, data, "group", "list"); !strings.Contains(out, "acme") {
		t.Errorf("group list: %s", out)
	}
}
