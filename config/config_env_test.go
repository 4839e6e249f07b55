package config

import (
	"strings"
	"testing"
)

// A value that came from ${VAR} is never printed in a config error, for
// any key Validate checks: the error names the key and the variable.
func TestConfigValidateErrorsDoNotPrintEnvValues(t *testing.T) {
	const secret = "hunter2 S3CRET-value"
	vars := map[string]string{"V": secret, "REMOTE": "10.98.76.54:8422"}
	for _, c := range []struct{ key, yaml string }{
		{"admin.listen", "admin: {listen: '${V}'}"},
		{"mcp.listen", "mcp: {listen: '${V}'}"},
		{"log.level", "log: {level: '${V}'}"},
		{"log.format", "log: {format: '${V}'}"},
		{"adapters.web.listen", "adapters: {web: {enabled: true, listen: '${V}'}}"},
		{"adapters.telegram.listen", "adapters: {telegram: {enabled: true, webhook_url: 'https://b.example/tg', listen: '${V}'}}"},
		{"adapters.telegram.webhook_url", "adapters: {telegram: {enabled: true, webhook_url: '${V}', listen: '127.0.0.1:8443'}}"},
		{"adapters.slack.listen", "adapters: {slack: {enabled: true, mode: events, listen: '${V}'}}"},
		{"adapters.slack.mode", "adapters: {slack: {mode: '${V}'}}"},
		{"nats.listen", "agent: {runner: nats}\nnats: {embedded: true, listen: '${V}'}"},
		{"timezone", "timezone: '${V}'"},
		{"operator_folder", "operator_folder: '${V}'"},
		{"agent.output", "agent: {output: '${V}'}"},
		{"agent.sandbox", "agent: {sandbox: '${V}'}"},
		{"agent.runner", "agent: {runner: '${V}'}"},
		{"agent.binds[0].path", "agent: {binds: [{path: '${V}'}]}"},
		{"agent.env[0]", "agent: {env: ['${V}']}"},
		{"mcp.url", "mcp: {listen: '127.0.0.1:8422', url: '${V}'}"},
		{"groups[0].folder", "groups: [{folder: '${V}'}]"},
		{"routes[0]", "routes: [{match: {platform: web}, target: '${V}'}]"},
		{"mcp.listen", "mcp: {listen: '${REMOTE}'}"}, // host:port, but off loopback without TLS
	} {
		t.Run(c.key, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), env(vars))
			if err == nil {
				t.Fatalf("no error for %s", c.yaml)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.key+":") || !strings.Contains(msg, "${") {
				t.Errorf("error = %q; want it to name %s and the variable", msg, c.key)
			}
			for _, part := range []string{"hunter2", "S3CRET", "10.98.76.54"} {
				if strings.Contains(msg, part) {
					t.Errorf("error prints the variable's value (%s): %q", part, msg)
				}
			}
		})
	}
}
