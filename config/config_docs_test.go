package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Settings appended after a "---" line form a second YAML document, which
// was silently dropped: the gateway ran without them. A second document
// with content is a start-up error naming the line it begins on; an empty
// one (a trailing "---", comments only) holds no settings and is fine.
func TestConfigSecondDocument(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"appended block", "data_dir: ./a\nagent:\n  timeout: 5m\n---\nagent:\n  max_concurrent: 2\n",
			`config: a second YAML document begins at line 4 ("---")`},
		{"after an empty first", "---\n---\ndata_dir: ./b\n", `config: a second YAML document begins at line 2 ("---")`},
		{"flow on the marker line", "data_dir: ./a\n--- {log: {level: debug}}\n", `config: a second YAML document begins at line 2 ("---")`},
		{"bad syntax in the second", "data_dir: ./a\n---\nagent: [\n", "parse yaml: yaml: line 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v; want it to contain %q", err, c.want)
			}
		})
	}
	for _, ok := range []string{
		"data_dir: ./a\n---\n",
		"data_dir: ./a\n---\n# nothing here yet\n",
		"---\ndata_dir: ./a\n",
		"data_dir: ./a\n...\n",
	} {
		cfg, err := Parse([]byte(ok), env(nil))
		if err != nil || cfg.DataDir != "./a" {
			t.Errorf("%q: data_dir=%q err=%v; want ./a and no error", ok, cfg.DataDir, err)
		}
	}
}

// The CLI commands other than run load the file without its lists
// (LoadSettings); they refuse a second document too, with the same line.
func TestLoadSettingsSecondDocument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.yaml")
	data := "data_dir: ./a\nroutes:\n  - {match: {platform: web}, target: main}\n---\nlog: {level: debug}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func(string, func(string) string) (Config, string, error){"Load": Load, "LoadSettings": LoadSettings} {
		_, _, err := load(path, env(nil))
		if err == nil || !strings.Contains(err.Error(), `a second YAML document begins at line 4 ("---")`) {
			t.Errorf("%s: error = %v; want the second document named with its line", name, err)
		}
	}
}
