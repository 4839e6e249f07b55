package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestExampleConfigParses(t *testing.T) {
	data, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, env(nil))
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	if cfg.Adapters.Web.Listen != "127.0.0.1:8420" || !cfg.Adapters.Web.Enabled {
		t.Errorf("web adapter = %+v, want enabled on 127.0.0.1:8420", cfg.Adapters.Web)
	}
	if len(cfg.Groups) != 2 || len(cfg.Routes) != 1 || cfg.Routes[0].Target != "main" {
		t.Errorf("groups/routes not read: %+v %+v", cfg.Groups, cfg.Routes)
	}
	if time.Duration(cfg.Agent.Timeout) != 10*time.Minute || cfg.Agent.Command[1] != "demo-agent" {
		t.Errorf("agent = %+v", cfg.Agent)
	}
}

func TestConfigEnvExpansion(t *testing.T) {
	yaml := `
data_dir: ${DATA:-/tmp/sb}
adapters:
  telegram: {enabled: true, token: "${TG}"}
  web: {enabled: true, listen: "${HOST:-127.0.0.1}:${PORT:-9000}"}
`
	cfg, err := Parse([]byte(yaml), env(map[string]string{"TG": "123:abc", "PORT": "9100"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != "/tmp/sb" || cfg.Adapters.Telegram.Token != "123:abc" || cfg.Adapters.Web.Listen != "127.0.0.1:9100" {
		t.Errorf("expansion wrong: data_dir=%q listen=%q", cfg.DataDir, cfg.Adapters.Web.Listen)
	}
	if s := Secret("123:abc").String(); strings.Contains(s, "abc") {
		t.Errorf("secret printed: %s", s)
	}
}

// TestConfigEnvNonStrings: ${VAR} sets numbers and booleans too, quoted or
// not. The expanded value kept the string type of the text it replaced, so
// "enabled: ${TG_ON:-false}" and "max_concurrent: '${N}'" were refused
// ("the value of ${N} is not a whole number") whatever the variable held.
func TestConfigEnvNonStrings(t *testing.T) {
	yaml := `
agent:
  max_concurrent: '${N}'
  network: ${NET:-true}
adapters:
  web: {enabled: "${WEB_ON}"}
  max_download_mb: ${MB:-7}
engage_ttl: '${TTL:-5m}'
`
	cfg, err := Parse([]byte(yaml), env(map[string]string{"N": "7", "NET": "false", "WEB_ON": "false"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.MaxConcurrent != 7 || cfg.Agent.Network || cfg.Adapters.Web.Enabled || cfg.Adapters.MaxDownloadMB != 7 || cfg.EngageTTL != Duration(5*time.Minute) {
		t.Errorf("max_concurrent %d, network %v, web.enabled %v, max_download_mb %d, engage_ttl %v",
			cfg.Agent.MaxConcurrent, cfg.Agent.Network, cfg.Adapters.Web.Enabled, cfg.Adapters.MaxDownloadMB, cfg.EngageTTL)
	}
	// A value of the wrong kind is still refused, naming the variable.
	if _, err := Parse([]byte("agent: {max_concurrent: '${N}'}"), env(map[string]string{"N": "lots"})); err == nil ||
		!strings.Contains(err.Error(), "agent.max_concurrent: the value of ${N} is not a whole number") {
		t.Errorf("N=lots: %v", err)
	}
}

// TestConfigValueErrorsGiveTheLine: an error about a value that parsed but
// is wrong names the line the key is on, as a parse error does; only
// "agent.timeout: must be positive" and the like said which key, not where
// in a long file.
func TestConfigValueErrorsGiveTheLine(t *testing.T) {
	yaml := "data_dir: ./d\n" +
		"agent:\n" +
		"  command: [switchboard, demo-agent]\n" +
		"  timeout: -5m\n" +
		"timezone: Mars/Base\n" +
		"groups:\n" +
		"  - folder: root\n" +
		"  - folder: main\n" +
		"  - folder: main\n" +
		"routes:\n" +
		"  - {match: {verb: mentoin}, target: main}\n"
	_, err := Parse([]byte(yaml), env(nil))
	for _, want := range []string{
		"agent.timeout: must be positive, e.g. 10m (line 4)",
		`timezone: "Mars/Base" is not an IANA time zone such as UTC or Europe/Berlin (line 5)`,
		`groups[2].folder: "main" is listed twice (first at groups[1]); merge the two entries (line 9)`,
		`routes[0]: route match: match key verb: glob "mentoin" matches neither message nor mention (line 11)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v\nwant it to contain %q", err, want)
		}
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown top-level key", "datadir: x", "datadir: unknown key"},
		{"unknown nested key", "adapters:\n  web: {lisen: x}", "adapters.web.lisen: unknown key"},
		{"bad duration", "agent: {timeout: soon}", `agent.timeout: "soon" is not a duration`},
		{"bad int", "agent: {max_concurrent: lots}", "agent.max_concurrent:"},
		// yaml.v3 cut a fraction off silently: 2.7 turns became 2.
		{"fraction for an int", "agent: {max_concurrent: 2.7}", `agent.max_concurrent: "2.7" is not a whole number (line 1)`},
		{"quoted int", "agent: {max_concurrent: '3'}", `agent.max_concurrent: "3" is not a whole number but a quoted string (line 1); write it without quotes`},
		{"quoted int in a block", "agent:\n  command: [switchboard, demo-agent]\n  max_concurrent: \"4\"\n", `agent.max_concurrent: "4" is not a whole number but a quoted string (line 3); write it without quotes`},
		{"quoted bool", "adapters:\n  web: {enabled: 'true'}\n", `adapters.web.enabled: "true" is not true or false but a quoted string (line 2); write it without quotes`},
		{"zero concurrency", "agent: {max_concurrent: 0}", "agent.max_concurrent: 0"},
		{"bad output", "agent: {output: xml}", `agent.output: "xml": want text, claude-json, claude-stream, codex-json or none`},
		{"empty command", "agent: {command: []}", "agent.command:"},
		{"bad timezone", "timezone: Mars/Olympus", "timezone:"},
		{"bad folder", "operator_folder: Root", "operator_folder:"},
		{"nested operator folder", "operator_folder: main/team", "operator_folder: \"main/team\": the operator folder must be a top-level folder"},
		{"bad sandbox", "agent: {sandbox: docker}", `agent.sandbox: "docker": want bwrap, auto or none`},
		{"relative bind", "agent: {binds: [{path: claude}]}", "agent.binds[0].path:"},
		{"bad env name", "agent: {env: ['A=B']}", "agent.env[0]:"},
		{"download cap", "adapters: {max_download_mb: 0}", "adapters.max_download_mb: 0"},
		{"bad group", "groups: [{folder: '../x'}]", "groups[0].folder:"},
		{"group listed twice", "groups: [{folder: root}, {folder: main}, {folder: main, mid_turn: steer}]", `groups[2].folder: "main" is listed twice (first at groups[1])`},
		{"bad route key", "routes: [{match: {planet: x}, target: root}]", "routes[0]:"},
		{"route that matches no message", "routes: [{match: {platform: web, verb: mentoin}, target: root}]", `routes[0]: route match: match key verb: glob "mentoin" matches neither message nor mention`},
		{"route seq out of range", "routes: [{match: {platform: web}, target: root, seq: -9223372036854775808}]", `routes[0]: route seq -9223372036854775808: want an integer from -1000000000 to 1000000000`},
		{"bad listen", "adapters: {web: {listen: nope}}", "adapters.web.listen:"},
		{"slack bad mode", "adapters: {slack: {mode: rtm}}", "adapters.slack.mode:"},
		{"slack events without listen", "adapters: {slack: {enabled: true, bot_token: x, mode: events, signing_secret: s}}", "adapters.slack.listen:"},
		{"bad log level", "log: {level: loud}", "log.level:"},
		{"unknown limit", "limits: {turns_per_room: {count: 1}}", "limits.turns_per_room: unknown key"},
		{"negative limit", "limits: {turns_per_sender: {count: -1}}", "limits.turns_per_sender.count: -1"},
		{"limit without window", "limits: {turns_per_chat: {count: 5, window: 0s}}", "limits.turns_per_chat.window: must be more than 0"},
		{"bad limit window", "limits: {turns_per_chat: {window: often}}", `limits.turns_per_chat.window: "often" is not a duration`},
		{"no chain", "limits: {max_chain: 0}", "limits.max_chain: 0"},
		{"bad stop_by", "limits: {stop_by: admins}", `limits.stop_by: "admins": want anyone or approvers`},
		{"bad mid_turn", "agent: {mid_turn: later}", `agent.mid_turn: "later": want queue, steer or interrupt`},
		{"bad group mid_turn", "groups: [{folder: root}, {folder: main, mid_turn: soon}]", `groups[1].mid_turn: "soon": want queue, steer or interrupt`},
		{"bad input", "agent: {input: json}", `agent.input: "json": want prompt or stream-json`},
		{"stream-json input without output", "agent: {input: stream-json, output: claude-json, command: [claude, -p, --input-format, stream-json, --output-format, stream-json, --verbose]}",
			`agent.input: stream-json needs agent.output: claude-stream (it is "claude-json")`},
		{"stream-json input without flags", "agent: {input: stream-json, output: claude-stream, command: [claude, -p, --output-format=stream-json]}",
			"agent.input: stream-json needs Claude Code run with --input-format stream-json --output-format stream-json --verbose in agent.command (missing: --input-format stream-json, --verbose)"},
		{"not a mapping", "agent: 5", "agent: want a mapping"},
		{"yaml syntax", "agent: [", "parse yaml"},
		{"tab indent", "agent:\n\ttimeout: 1m\n", "line 2 is indented with a tab; YAML indents with spaces only"},
		{"tab after spaces", "agent:\n  timeout: 1m\n  \tmax_concurrent: 2\n", "line 3 is indented with a tab; YAML indents with spaces only"},
		{"malformed var", "data_dir: ${FOO", "data_dir: malformed variable"},
		{"malformed nested var", "adapters: {web: {listen: '${X'}}", "adapters.web.listen: malformed variable"},
		{"mcp off lan without tls", "mcp: {listen: '0.0.0.0:8422'}", "mcp.listen: \"0.0.0.0:8422\" is not a loopback address, so agents' tokens would cross the network in clear: set mcp.tls_cert and mcp.tls_key"},
		{"mcp cert without key", "mcp: {listen: '127.0.0.1:8422', tls_cert: c.pem}", "mcp.tls_cert: mcp.tls_cert and mcp.tls_key go together"},
		{"mcp bad listen", "mcp: {listen: nope}", "mcp.listen: \"nope\" is not host:port"},
		{"mcp bad url", "mcp: {listen: '127.0.0.1:8422', url: 'gw:8422'}", "mcp.url:"},
		{"mcp tls without listen", "mcp: {tls_cert: c.pem, tls_key: k.pem}", "mcp.listen: is empty"},
		{"unknown runner", "agent: {runner: ssh}", `agent.runner: "ssh": want local or nats`},
		{"nats runner without server", "agent: {runner: nats}", "nats.url: is empty and nats.embedded is off"},
		{"nats url and embedded", "agent: {runner: nats}\nnats: {url: 'nats://x:4222', embedded: true}", "nats.url: is set and nats.embedded is on"},
		{"nats embedded bad listen", "agent: {runner: nats}\nnats: {embedded: true, listen: nope}", `nats.listen: "nope" is not host:port`},
		{"nats url without creds", "agent: {runner: nats}\nnats: {url: 'nats://n:4222'}", "nats.creds: is empty, and a NATS server of your own (nats.url) is used only with credentials: set nats.creds"},
		{"nats embedded off loopback without tls", "agent: {runner: nats}\nnats: {embedded: true, listen: '0.0.0.0:4222'}",
			`nats.listen: "0.0.0.0:4222" is not a loopback address, so jobs (prompts, agent.env values, MCP tokens) would cross the network in clear: set nats.tls_cert and nats.tls_key`},
		{"nats tls half", "nats: {tls_cert: c.pem}", "nats.tls_cert: nats.tls_cert and nats.tls_key go together"},
		{"nats max folder", "nats: {max_folder_mb: 0}", "nats.max_folder_mb: 0: want 1 to 65536"},
		{"nats snapshot exclude", "nats: {snapshot_exclude: ['*.secret', '[x']}", `nats.snapshot_exclude[1]: "[x" is not a glob`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// The limits have defaults that are on; a file changes what it names and
// keeps the rest, and count 0 turns a flood limit off.
func TestConfigLimits(t *testing.T) {
	cfg, err := Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := LimitsConfig{TurnsPerSender: RateConfig{30, Duration(time.Minute)}, TurnsPerChat: RateConfig{60, Duration(time.Minute)}, MaxChain: 8, StopBy: "anyone"}
	if cfg.Limits != want {
		t.Errorf("default limits = %+v; want %+v", cfg.Limits, want)
	}
	cfg, err = Parse([]byte("limits: {turns_per_sender: {count: 3}, turns_per_chat: {count: 0}, max_chain: 4, stop_by: approvers}"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want = LimitsConfig{TurnsPerSender: RateConfig{3, Duration(time.Minute)}, TurnsPerChat: RateConfig{0, Duration(time.Minute)}, MaxChain: 4, StopBy: "approvers"}
	if cfg.Limits != want {
		t.Errorf("limits = %+v; want %+v", cfg.Limits, want)
	}
}

func TestConfigListsReplaceDefaults(t *testing.T) {
	cfg, err := Parse([]byte("groups: [{folder: ops}]\nroutes: [{match: {platform: web}, target: ops}]"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Groups) != 1 || cfg.Groups[0].Folder != "ops" || len(cfg.Routes) != 1 {
		t.Errorf("groups = %+v routes = %+v", cfg.Groups, cfg.Routes)
	}
}

// Tokens and secrets are checked for `run` only (ValidateSecrets); the
// config parses without them, so the CLI works in a shell without them.
func TestSecretsAreCheckedForRunOnly(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"telegram without token", "adapters: {telegram: {enabled: true}}", "adapters.telegram.token: empty; set TELEGRAM_BOT_TOKEN"},
		// An empty token says the fix that applies to how the file wrote it:
		// a variable of its own name is not TELEGRAM_BOT_TOKEN.
		{"telegram token from an unset variable", "adapters: {telegram: {enabled: true, token: '${MY_TG}'}}",
			"adapters.telegram.token: empty: ${MY_TG} is not set (or empty) in the environment of switchboard run; export it"},
		{"telegram token written empty", "adapters: {telegram: {enabled: true, token: ''}}",
			"adapters.telegram.token: empty in the config; write the token there, or remove the key to read it from TELEGRAM_BOT_TOKEN"},
		{"discord token from an unset variable", "adapters: {discord: {enabled: true, token: '${DC_TOKEN}'}}", "adapters.discord.token: empty: ${DC_TOKEN} is not set"},
		{"slack token from an unset variable", "adapters: {slack: {enabled: true, bot_token: '${SB_BOT}', app_token: xapp-1}}", "adapters.slack.bot_token: empty: ${SB_BOT} is not set"},
		{"slack app token from an unset variable", "adapters: {slack: {enabled: true, bot_token: xoxb-1, app_token: '${SB_APP}'}}", "adapters.slack.app_token: empty: ${SB_APP} is not set"},
		{"webhook without secret", "adapters: {telegram: {enabled: true, token: x, webhook_url: 'https://b.example/tg', listen: '127.0.0.1:8443'}}", "adapters.telegram.secret_token:"},
		{"discord without token", "adapters: {discord: {enabled: true}}", "adapters.discord.token: empty"},
		{"slack without bot token", "adapters: {slack: {enabled: true, app_token: xapp-1}}", "adapters.slack.bot_token: empty"},
		{"slack socket without app token", "adapters: {slack: {enabled: true, bot_token: xoxb-1}}", "adapters.slack.app_token: empty"},
		{"slack events without secret", "adapters: {slack: {enabled: true, bot_token: xoxb-1, mode: events, listen: '127.0.0.1:3000'}}", "adapters.slack.signing_secret: empty"},
		{"slack tokens swapped (bot)", "adapters: {slack: {enabled: true, bot_token: xapp-1-A, app_token: xoxb-1}}",
			"adapters.slack.bot_token: starts with xapp-: that is the app-level token; the bot token starts with xoxb-"},
		{"slack tokens swapped (app)", "adapters: {slack: {enabled: true, bot_token: xapp-1-A, app_token: xoxb-1}}",
			"adapters.slack.app_token: starts with xoxb-: that is the bot token; the app-level token starts with xapp-"},
		{"slack user token", "adapters: {slack: {enabled: true, bot_token: xoxp-1, app_token: xapp-1}}", "adapters.slack.bot_token: starts with xoxp-: that is a user token"},
		{"slack bot token of no kind", "adapters: {slack: {enabled: true, bot_token: hunter2, app_token: xapp-1}}", "adapters.slack.bot_token: does not start with xoxb-"},
		{"slack app token of no kind", "adapters: {slack: {enabled: true, bot_token: xoxb-1, app_token: hunter2}}", "adapters.slack.app_token: does not start with xapp-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.yaml), env(nil))
			if err != nil {
				t.Fatalf("the config must parse without tokens: %v", err)
			}
			if err := cfg.ValidateSecrets(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
	ok := "adapters: {slack: {enabled: true, bot_token: xoxb-1, app_token: xapp-1}, telegram: {enabled: true, token: '1:x'}, discord: {enabled: true, token: d}}"
	cfg, err := Parse([]byte(ok), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ValidateSecrets(); err != nil {
		t.Errorf("good tokens: %v", err)
	}
}

// A config error about a value that came from the environment names the key
// and the variable, never the value (often a secret); a variable's value
// may itself hold "${".
func TestConfigErrorsDoNotPrintSecrets(t *testing.T) {
	const secret = "123456:AAsecretTOKENvalue"
	vars := map[string]string{"TELEGRAM_BOT_TOKEN": secret, "WEIRD": "pa${ss"}
	webhook := "adapters: {telegram: {enabled: true, token: x, webhook_url: 'https://b.example/tg', listen: '127.0.0.1:8443', secret_token: '%s'}}"
	for _, c := range []struct{ name, yaml, want string }{
		{"malformed reference after a secret", "adapters: {telegram: {enabled: true, token: '${TELEGRAM_BOT_TOKEN}${X'}}", "adapters.telegram.token: malformed variable reference"},
		{"secret in a bool", "adapters: {telegram: {enabled: '${TELEGRAM_BOT_TOKEN}'}}", "adapters.telegram.enabled: the value of ${TELEGRAM_BOT_TOKEN} is not true or false"},
		{"secret in a duration", "agent: {timeout: '${TELEGRAM_BOT_TOKEN}'}", "agent.timeout: the value of ${TELEGRAM_BOT_TOKEN} is not a duration"},
		{"secret_token with a colon", fmt.Sprintf(webhook, secret), "adapters.telegram.secret_token: webhook mode needs a secret of 16 to 256 characters, only A-Z"},
		{"secret_token with a space", fmt.Sprintf(webhook, "0123456789abcdef ghij"), "adapters.telegram.secret_token:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.yaml), env(vars))
			if err == nil {
				err = cfg.ValidateSecrets() // what run checks on top
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v; want it to contain %q", err, c.want)
			}
			if err != nil && (strings.Contains(err.Error(), "AAsecret") || strings.Contains(err.Error(), "123456:")) {
				t.Errorf("the error prints the secret: %v", err)
			}
		})
	}
	cfg, err := Parse([]byte("adapters: {slack: {signing_secret: '${WEIRD}'}}"), env(vars))
	if err != nil || cfg.Adapters.Slack.SigningSecret != "pa${ss" {
		t.Errorf("a value holding ${ after expansion: %v, %q", err, cfg.Adapters.Slack.SigningSecret)
	}
	if cfg, err := Parse([]byte(fmt.Sprintf(webhook, "0123456789abcdef_-XYZ")), env(vars)); err != nil || cfg.ValidateSecrets() != nil {
		t.Errorf("a valid secret_token refused: %v", err)
	}
}

// agent.runner defaults to local; nats with either server parses.
func TestConfigRunner(t *testing.T) {
	cfg, err := Parse(nil, env(nil))
	if err != nil || cfg.Agent.Runner != "local" || cfg.NATS.Listen != "127.0.0.1:4222" {
		t.Fatalf("defaults: runner %q nats.listen %q err %v; want local, 127.0.0.1:4222", cfg.Agent.Runner, cfg.NATS.Listen, err)
	}
	for _, y := range []string{"agent: {runner: nats}\nnats: {embedded: true}", "agent: {runner: nats}\nnats: {url: 'nats://n:4222', creds: gw.creds}",
		"agent: {runner: nats}\nnats: {embedded: true, listen: '0.0.0.0:4222', tls_cert: c.pem, tls_key: k.pem}"} {
		if _, err := Parse([]byte(y), env(nil)); err != nil {
			t.Errorf("%q: %v", y, err)
		}
	}
}

// Every output agent.ParseOutput knows is a valid agent.output,
// claude-stream included.
func TestConfigAgentOutputs(t *testing.T) {
	for _, o := range []string{"text", "claude-json", "claude-stream", "codex-json", "none"} {
		cfg, err := Parse([]byte("agent: {output: "+o+"}\n"), env(nil))
		if err != nil {
			t.Errorf("agent.output %s: %v", o, err)
			continue
		}
		if string(cfg.Agent.Output) != o {
			t.Errorf("agent.output %s read as %q", o, cfg.Agent.Output)
		}
	}
}

// Live replies: native by default on every adapter (Slack 0.5s apart, the
// others 1s), progress lines on; a bad mode or interval names its key.
func TestStreamSettings(t *testing.T) {
	cfg, err := Parse([]byte("adapters: {telegram: {stream: edit, stream_interval: 2s}}\nagent: {progress: false}"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Adapters
	if a.Web.Stream != "native" || a.Slack.Stream != "native" || a.Discord.Stream != "native" || a.Telegram.Stream != "edit" ||
		time.Duration(a.Slack.StreamInterval) != 500*time.Millisecond || time.Duration(a.Web.StreamInterval) != time.Second ||
		time.Duration(a.Telegram.StreamInterval) != 2*time.Second || cfg.Agent.Progress {
		t.Errorf("stream settings = %+v progress %v", a, cfg.Agent.Progress)
	}
	if !Default().Agent.Progress {
		t.Error("agent.progress is off by default")
	}
	for yaml, want := range map[string]string{
		"adapters: {slack: {stream: live}}":           "adapters.slack.stream: \"live\": want native",
		"adapters: {discord: {stream_interval: 1ms}}": "adapters.discord.stream_interval: 1ms: want 100ms to 1m",
	} {
		if _, err := Parse([]byte(yaml), env(nil)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", yaml, err, want)
		}
	}
}

// TestApprovalsConfig: approvals.* and groups[].approvals decode strictly
// and a bad value names its key.
func TestApprovalsConfig(t *testing.T) {
	cfg, err := Parse([]byte("approvals: {timeout: 90s, agent_tools: [Bash, 'mcp__*']}\ngroups: [{folder: root}, {folder: main, approvals: {approvers: ['web:user/ann'], chat: 'web:approvals'}}]"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(cfg.Approvals.Timeout) != 90*time.Second || len(cfg.Approvals.AgentTools) != 2 {
		t.Errorf("approvals = %+v", cfg.Approvals)
	}
	if got := cfg.GroupApprovalsOf()["main"]; len(got.Approvers) != 1 || got.Approvers[0] != "web:user/ann" || got.Chat != "web:approvals" {
		t.Errorf("main's approvals = %+v", got)
	}
	if d := Default(); time.Duration(d.Approvals.Timeout) != 10*time.Minute {
		t.Errorf("default approvals.timeout = %v, want 10m", d.Approvals.Timeout)
	}
	// An anonymous admin of a Telegram group writes as the group: its JID
	// is their sender JID, and listing it lets their "/approve" decide.
	if _, err := Parse([]byte("groups: [{folder: root}, {folder: main, approvals: {approvers: ['telegram:group/1001234567890']}}]"), env(nil)); err != nil {
		t.Errorf("a Telegram group as approver (its anonymous admins): %v", err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"approvals: {timeout: 0s}", "approvals.timeout: must be positive"},
		{"approvals: {agent_tools: ['[']}", "approvals.agent_tools[0]:"},
		{"groups: [{folder: main, approvals: {approvers: [ann]}}]", "groups[0].approvals.approvers[0]:"},
		{"groups: [{folder: main, approvals: {approvers: ['web:user/ann', 'telegram:channel/123']}}]", `groups[0].approvals.approvers[1]: "telegram:channel/123" is a chat, not a person: a person's JID is telegram:user/<id>`},
		{"groups: [{folder: main, approvals: {approvers: ['slack:T1/channel/C1']}}]", "slack:<team>/user/<id>"},
		{"groups: [{folder: main, approvals: {approvers: ['discord:111/222']}}]", "discord:user/<id>"},
		{"groups: [{folder: main, approvals: {approvers: ['web:lobby']}}]", "web:user/<name>"},
		{"groups: [{folder: main, approvals: {chat: nope}}]", "groups[0].approvals.chat:"},
		{"groups: [{folder: main, approvals: {approver: ['web:user/ann']}}]", "approver"},
	} {
		if _, err := Parse([]byte(c.yaml), env(nil)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error = %v, want it to contain %q", c.yaml, err, c.want)
		}
	}
}

// agent.input: stream-json is taken for Claude Code run to read it.
func TestConfigStreamJSONInput(t *testing.T) {
	cfg, err := Parse([]byte(`agent: {input: stream-json, output: claude-stream, mid_turn: steer,
  command: [claude, -p, --input-format=stream-json, --output-format, stream-json, --verbose]}
groups: [{folder: root}, {folder: main, mid_turn: interrupt}]`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.Input != "stream-json" || cfg.Agent.MidTurn != "steer" || cfg.Groups[1].MidTurn != "interrupt" {
		t.Errorf("agent %+v groups %+v", cfg.Agent, cfg.Groups)
	}
}

// TestListenAddressesNeedAPort: a listen address whose port no listener
// takes is a config error naming the key. ":99999" or "127.0.0.1:842O"
// passed the check (net.SplitHostPort takes any port text), every CLI
// command read the file, and run then failed with "invalid port (is
// another program using it? ...)". Port 0 and service names still pass.
func TestListenAddressesNeedAPort(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"adapters: {web: {listen: ':99999'}}", `adapters.web.listen: ":99999" is not host:port`},
		{"adapters: {web: {listen: '127.0.0.1:842O'}}", `adapters.web.listen: "127.0.0.1:842O" is not host:port`},
		{"admin: {listen: '127.0.0.1:70000'}", `admin.listen: "127.0.0.1:70000" is not host:port`},
		{"mcp: {listen: '127.0.0.1:-1'}", `mcp.listen: "127.0.0.1:-1" is not host:port`},
	} {
		if _, err := Parse([]byte(tc.yaml), env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
	for _, ok := range []string{"adapters: {web: {listen: '127.0.0.1:0'}}", "admin: {listen: 'localhost:8421'}", "admin: {listen: ':http'}"} {
		if _, err := Parse([]byte(ok), env(nil)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
