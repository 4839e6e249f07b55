package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLoadSettings: the CLI's load skips the groups and routes lists (a bad
// route does not stop `switchboard status`), reads every other key as Load
// does, and reports any other error exactly as Load (and so run) does.
func TestLoadSettings(t *testing.T) {
	const routes = "routes:\n- {match: {platform: web}, target: main}\n\n# a comment\n- {match: {chat_jid: \"web:b\"}, target: main}\n"
	const groups = "groups:\n  - folder: root\n  - folder: main\n"
	cases := []struct {
		name, yaml  string
		settingsErr bool // LoadSettings fails (with Load's error)
		loadErr     bool
	}{
		{"lists between keys", "data_dir: /tmp/a\n" + groups + routes + "agent: {max_concurrent: 7}\nlog: {level: debug}\n", false, false},
		{"lists first", groups + routes + "data_dir: /tmp/b\n", false, false},
		{"flow style, nothing cut", `{data_dir: /tmp/c, routes: [{match: {platform: web}, target: main}]}`, false, false},
		{"document markers", "---\ndata_dir: /tmp/d\n" + routes + "...\n", false, false},
		{"a bad route is skipped", "data_dir: /tmp/e\n" + groups + "routes:\n  - {match: {verb: mentoin}, target: main}\n", false, true},
		{"a bad key after the lists", "data_dir: /tmp/f\n" + groups + routes + "agent: {max_concurrent: 0}\n", true, true},
		{"a bad key before the lists", "agent: {timeout: soon}\n" + groups + routes, true, true},
		{"an alias into a cut list", "groups:\n  - &g {folder: main}\nextra: *g\n" + routes, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "switchboard.yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			full, _, ferr := Load(path, env(nil))
			got, _, err := LoadSettings(path, env(nil))
			if (ferr != nil) != c.loadErr {
				t.Fatalf("Load error = %v, want error %v", ferr, c.loadErr)
			}
			if c.settingsErr {
				if err == nil || ferr == nil || err.Error() != ferr.Error() {
					t.Fatalf("LoadSettings error = %v, want Load's: %v", err, ferr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadSettings: %v", err)
			}
			if len(got.Groups)+len(got.Routes) != 0 {
				t.Errorf("LoadSettings read the lists: %v %v", got.Groups, got.Routes)
			}
			if c.loadErr {
				return
			}
			full.Groups, full.Routes = nil, nil
			if !reflect.DeepEqual(got, full) {
				t.Errorf("LoadSettings = %+v\nwant Load's %+v", got, full)
			}
		})
	}
}

// TestMissingConfigFileSaysWhatToDo: --config naming no file is an error
// that names the file and says how to start one, from Load (run) and
// LoadSettings (the other commands) alike.
func TestMissingConfigFileSaysWhatToDo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.yaml")
	for name, load := range map[string]func(string, func(string) string) (Config, string, error){"Load": Load, "LoadSettings": LoadSettings} {
		_, _, err := load(path, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "cp config.example.yaml switchboard.yaml") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
