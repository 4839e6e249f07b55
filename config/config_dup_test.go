package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// A key given twice in one mapping is an error naming the key and both
// lines, in block and flow style and at any depth; the same key in two
// mappings is not.
func TestConfigDuplicateKey(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"block", "agent:\n  command: [switchboard, demo-agent]\n  output: text\n  command: [claude, -p]\n", "agent.command: duplicated key (line 4; first at line 2)"},
		{"flow", "log: {level: info, level: debug}", "log.level: duplicated key (line 1; first at line 1)"},
		{"top level", "timezone: UTC\ndata_dir: ./a\ndata_dir: ./b\n", "data_dir: duplicated key (line 3; first at line 2)"},
		{"in a list item", "routes:\n  - match: {platform: web, platform: discord}\n    target: main\n", "routes[0].match.platform: duplicated key (line 2; first at line 2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v; want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := Parse([]byte("adapters:\n  web: {listen: '127.0.0.1:1'}\n  slack: {listen: '127.0.0.1:2'}\n"), env(nil)); err != nil {
		t.Errorf("the same key in two mappings: %v", err)
	}
}

// config.example.yaml with its Claude Code lines uncommented, as an
// operator might, names the first key given twice instead of running the
// demo agent or Claude Code depending on which came last.
func TestExampleConfigClaudeUncommented(t *testing.T) {
	data, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The block's key lines, up to the "  #" line that ends it.
	block := regexp.MustCompile(`(?m)^  # Claude Code[^\n]*\n(?:  # [^\n]*\n)*?((?:  # [a-z_]+: [^\n]*\n)+)  #\n`).FindSubmatchIndex(data)
	if block == nil {
		t.Fatal("config.example.yaml has no Claude Code block")
	}
	keys := strings.ReplaceAll(string(data[block[2]:block[3]]), "  # ", "  ")
	edited := string(data[:block[2]]) + keys + string(data[block[3]:])
	_, err = Parse([]byte(edited), env(nil))
	if err == nil || !strings.Contains(err.Error(), "agent.command: duplicated key (line ") {
		t.Errorf("error = %v; want agent.command named as duplicated", err)
	}
}
