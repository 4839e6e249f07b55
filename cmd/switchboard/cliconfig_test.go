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
