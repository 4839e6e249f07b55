// Package config owns switchboard.yaml (CONTRACT §2): the Config types and
// their defaults, ${VAR} expansion, the strict YAML decoding (unknown and
// duplicated keys named with their key path and line, values that came
// from the environment never quoted) and validation. Only cmd imports it;
// each part of the gateway gets the small section it uses.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/remote"
	"switchboard/routing"
)

// Config is the YAML configuration (CONTRACT §2). Sections are small structs
// that are handed to the parts that use them; nothing below cmd sees Config.
type Config struct {
	DataDir        string          `yaml:"data_dir"`
	OperatorFolder groups.Folder   `yaml:"operator_folder"`
	Timezone       string          `yaml:"timezone"`
	Log            LogConfig       `yaml:"log"`
	Agent          AgentConfig     `yaml:"agent"`
	EngageTTL      Duration        `yaml:"engage_ttl"`
	Limits         LimitsConfig    `yaml:"limits"`
	Adapters       AdaptersConfig  `yaml:"adapters"`
	Admin          AdminConfig     `yaml:"admin"`
	MCP            MCPConfig       `yaml:"mcp"`
	NATS           NATSConfig      `yaml:"nats"`
	Groups         []GroupSeed     `yaml:"groups"`
	Routes         []RouteSeed     `yaml:"routes"`
	Budgets        []BudgetSeed    `yaml:"budgets"`
	Approvals      ApprovalsConfig `yaml:"approvals"`

	// tokens says how the file gave each adapter token, so that an empty
	// one is reported with the fix that applies (ValidateSecrets).
	tokens tokenSources
}

// tokenSources holds, per token key, how the file wrote it: "" when it left
// the key out (the default variable applies), the variable references
// ("${MY_TOKEN}") when it named some, tokenLiteral when it wrote a value.
type tokenSources struct{ telegram, discord, slackBot, slackApp string }

const tokenLiteral = "literal"

// source is how the file wrote the value at path (tokenSources).
func (d decoder) source(path string) string {
	if e, ok := d.env[path]; ok && e.refs != "" {
		return e.refs
	}
	if _, ok := d.lines[path]; ok {
		return tokenLiteral
	}
	return ""
}

// emptyToken is what ValidateSecrets says of an empty token at key, whose
// default variable is def and which the file wrote as src (tokenSources).
func emptyToken(src, def string) string {
	switch src {
	case "":
		return fmt.Sprintf("empty; set %s or disable the adapter", def)
	case tokenLiteral:
		return fmt.Sprintf("empty in the config; write the token there, or remove the key to read it from %s, or disable the adapter", def)
	default:
		return fmt.Sprintf("empty: %s is not set (or empty) in the environment of switchboard run; export it, or disable the adapter", src)
	}
}

type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

type AgentConfig struct {
	Command       []string     `yaml:"command"`
	ResumeArgs    []string     `yaml:"resume_args"`
	Output        agent.Output `yaml:"output"`
	Timeout       Duration     `yaml:"timeout"`
	MaxConcurrent int          `yaml:"max_concurrent"`
	Sandbox       string       `yaml:"sandbox"` // bwrap | auto | none
	Binds         []BindConfig `yaml:"binds"`
	Network       bool         `yaml:"network"`
	Env           []string     `yaml:"env"`
	// MaxTurnUSD caps one turn's spend where the agent can enforce it:
	// claude-json and claude-stream agents get --max-budget-usd (agent.NewSpec). 0: none.
	MaxTurnUSD float64 `yaml:"max_turn_usd"`
	// Price charges turns that report tokens and no cost (Codex).
	Price PriceConfig `yaml:"price"`
	// Runner is where turns run: local (this machine) or nats (worker
	// machines, through the NATS JetStream of nats.*).
	Runner string `yaml:"runner"`
	// Progress shows "running <tool>: <summary>" in a live reply while the
	// agent runs a tool. Default true.
	Progress bool `yaml:"progress"`
	// MidTurn is what a message does that arrives while its group's turn
	// runs in its chat: queue (default), steer or interrupt
	// (groups[].mid_turn and `switchboard group set --mid-turn` per group).
	MidTurn string `yaml:"mid_turn"`
	// Input is how the agent takes input: prompt (default: on stdin, then
	// closed) or stream-json (Claude Code's --input-format stream-json:
	// steering writes messages into the running turn).
	Input string `yaml:"input"`
}

// NATSConfig is the NATS server that carries turns to workers when
// agent.runner is nats: an external one (URL) or one embedded in the
// gateway (Embedded, listening on Listen; JetStream stored in
// <data_dir>/nats, credentials in <data_dir>/nats-auth).
type NATSConfig struct {
	URL      string `yaml:"url"`
	Embedded bool   `yaml:"embedded"`
	Listen   string `yaml:"listen"` // embedded server's host:port; default 127.0.0.1:4222
	// Creds is the client's credentials file (an nkey seed): the gateway's
	// for an external URL, a worker's for `switchboard worker`. TLSCA
	// verifies the server's certificate (default: the system's roots).
	Creds string `yaml:"creds"`
	TLSCA string `yaml:"tls_ca"`
	// TLSCert and TLSKey (PEM files) make the embedded server speak TLS;
	// required unless Listen is on loopback.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// SnapshotExclude are globs of folder paths never snapshotted (besides
	// remote.DefaultSnapshotExclude: credentials); MaxFolderMB caps a
	// snapshotted group folder. Both apply on the gateway and on workers.
	SnapshotExclude []string `yaml:"snapshot_exclude"`
	MaxFolderMB     int      `yaml:"max_folder_mb"`
}

// LimitsConfig bounds the turns people and agents can start: flood limits
// on chat messages, and how deep a chain of delegate_group/escalate_group
// turns may go (docs/operating.md, "Flood limits and the chain guard").
type LimitsConfig struct {
	TurnsPerSender RateConfig `yaml:"turns_per_sender"`
	TurnsPerChat   RateConfig `yaml:"turns_per_chat"`
	MaxChain       int        `yaml:"max_chain"`
	// StopBy says who may stop a chat's running turn (/stop, the Stop
	// button): anyone (the default) or approvers (the group's
	// approvals.approvers).
	StopBy string `yaml:"stop_by"`
}

// RateConfig is at most Count turns started per Window; count 0 is off.
type RateConfig struct {
	Count  int      `yaml:"count"`
	Window Duration `yaml:"window"`
}

// AdminConfig is the operator's HTTP listener: /metrics, /healthz, /readyz
// and a status page. An empty Listen turns it off.
type AdminConfig struct {
	Listen string `yaml:"listen"`
}

// MCPConfig is the MCP Streamable HTTP endpoint: the groups' MCP servers
// for agents on other machines or network namespaces, with per-turn bearer
// tokens. An empty Listen turns it off (the default).
type MCPConfig struct {
	Listen  string `yaml:"listen"`   // host:port
	TLSCert string `yaml:"tls_cert"` // PEM files; required unless Listen is on loopback
	TLSKey  string `yaml:"tls_key"`
	URL     string `yaml:"url"` // given to agents as SWITCHBOARD_MCP_URL; default from listen
}

// BindConfig is an extra path visible to sandboxed agents.
type BindConfig struct {
	Path string `yaml:"path"`
	RW   bool   `yaml:"rw"`
}

type AdaptersConfig struct {
	Web           WebConfig      `yaml:"web"`
	Telegram      TelegramConfig `yaml:"telegram"`
	Discord       DiscordConfig  `yaml:"discord"`
	Slack         SlackConfig    `yaml:"slack"`
	MaxDownloadMB int            `yaml:"max_download_mb"` // attachments fetched into a group folder before a turn
}

// Platforms are the platforms an adapter of this binary serves, in the
// order of AdaptersConfig's fields.
var Platforms = []string{"web", "telegram", "discord", "slack"}

// Enabled reports whether the adapter of platform (a JID's platform) is
// enabled; false for a platform no adapter serves (see Platforms).
func (a AdaptersConfig) Enabled(platform string) bool {
	switch platform {
	case "web":
		return a.Web.Enabled
	case "telegram":
		return a.Telegram.Enabled
	case "discord":
		return a.Discord.Enabled
	case "slack":
		return a.Slack.Enabled
	}
	return false
}

type WebConfig struct {
	Enabled      bool   `yaml:"enabled"`
	Listen       string `yaml:"listen"`
	StreamConfig `yaml:",inline"`
}

// StreamConfig is an adapter's live-reply setting, the same keys for
// every platform (AdaptersConfig.Streams lists them by platform).
type StreamConfig struct {
	// Stream is how a turn's reply shows while it runs: native (the
	// platform's live reply), edit (one message edited), off. Default native.
	Stream string `yaml:"stream"`
	// StreamInterval is the shortest time between two updates of a live
	// reply. Default 1s (Slack 0.5s).
	StreamInterval Duration `yaml:"stream_interval"`
}

// Streams are the live-reply settings of the adapters, by platform: the
// one list that validation and the gateway's wiring read.
func (a AdaptersConfig) Streams() map[string]StreamConfig {
	return map[string]StreamConfig{"web": a.Web.StreamConfig, "telegram": a.Telegram.StreamConfig, "discord": a.Discord.StreamConfig, "slack": a.Slack.StreamConfig}
}

type TelegramConfig struct {
	Enabled bool   `yaml:"enabled"`
	Token   Secret `yaml:"token"`
	APIURL  string `yaml:"api_url"`
	// Webhook mode instead of long polling: Telegram posts to WebhookURL
	// (public HTTPS), which your proxy forwards to Listen.
	WebhookURL   string `yaml:"webhook_url"`
	Listen       string `yaml:"listen"`
	SecretToken  Secret `yaml:"secret_token"`
	StreamConfig `yaml:",inline"`
}

type DiscordConfig struct {
	Enabled      bool   `yaml:"enabled"`
	Token        Secret `yaml:"token"`
	APIURL       string `yaml:"api_url"`
	StreamConfig `yaml:",inline"`
}

type SlackConfig struct {
	Enabled       bool   `yaml:"enabled"`
	BotToken      Secret `yaml:"bot_token"`
	AppToken      Secret `yaml:"app_token"`
	Mode          string `yaml:"mode"`
	SigningSecret Secret `yaml:"signing_secret"`
	Listen        string `yaml:"listen"`
	APIURL        string `yaml:"api_url"`
	StreamConfig  `yaml:",inline"`
}

// GroupSeed is a group created at start if missing, and its settings.
type GroupSeed struct {
	Folder    groups.Folder  `yaml:"folder"`
	Approvals GroupApprovals `yaml:"approvals"`
	// MidTurn is the group's own agent.mid_turn ("": the default), set at
	// every start.
	MidTurn string `yaml:"mid_turn"`
}

// ApprovalsConfig is the top-level approvals: section (CONTRACT §15): how
// long a request waits for a decision, and which of Claude Code's own tools
// approve_tool asks about.
type ApprovalsConfig struct {
	Timeout Duration `yaml:"timeout"`
	// AgentTools are globs over Claude Code's tool names (Bash, Write,
	// WebFetch, mcp__*): a call approve_tool is asked about waits for an
	// approver when one matches, and is allowed at once otherwise. Empty:
	// approve_tool is not offered.
	AgentTools []string `yaml:"agent_tools"`
}

// GroupApprovals is groups[].approvals: who may decide the group's
// requests (JIDs of people; a subgroup without its own inherits its
// parent's) and the chat requests are posted in ("" : the turn's chat).
type GroupApprovals struct {
	Approvers []string `yaml:"approvers"`
	Chat      string   `yaml:"chat"`
}

// RouteSeed is a route created at the first start of a new database.
type RouteSeed struct {
	Match  map[string]string `yaml:"match"`
	Target groups.Folder     `yaml:"target"`
	Seq    int               `yaml:"seq"`
	Mode   string            `yaml:"mode"`
}

// Duration is a time.Duration written as "10m" in YAML.
type Duration time.Duration

// Secret is a string that never prints.
type Secret string

func (Secret) String() string { return "[redacted]" }

// GoString keeps secrets out of %#v too.
func (Secret) GoString() string { return "[redacted]" }

// Default is used when no config file exists; it matches config.example.yaml.
func Default() Config {
	return Config{
		DataDir:        "./data",
		OperatorFolder: "root",
		Timezone:       "UTC",
		Log:            LogConfig{Level: "info", Format: "text"},
		Agent: AgentConfig{
			Command:       []string{"switchboard", "demo-agent"},
			Output:        agent.OutputText,
			Timeout:       Duration(10 * time.Minute),
			MaxConcurrent: 4,
			Sandbox:       "auto",
			Network:       true,
			Runner:        "local",
			Progress:      true,
			MidTurn:       "queue",
			Input:         "prompt",
		},
		NATS:      NATSConfig{Listen: "127.0.0.1:4222", MaxFolderMB: remote.DefaultMaxFolderMB},
		EngageTTL: Duration(10 * time.Minute),
		Limits: LimitsConfig{
			TurnsPerSender: RateConfig{Count: 30, Window: Duration(time.Minute)},
			TurnsPerChat:   RateConfig{Count: 60, Window: Duration(time.Minute)},
			MaxChain:       8,
			StopBy:         "anyone",
		},
		Adapters: AdaptersConfig{
			Web:           WebConfig{Enabled: true, Listen: "127.0.0.1:8420", StreamConfig: StreamConfig{"native", Duration(time.Second)}},
			Telegram:      TelegramConfig{StreamConfig: StreamConfig{"native", Duration(time.Second)}},
			Discord:       DiscordConfig{StreamConfig: StreamConfig{"native", Duration(time.Second)}},
			Slack:         SlackConfig{Mode: "socket", StreamConfig: StreamConfig{"native", Duration(500 * time.Millisecond)}},
			MaxDownloadMB: 25,
		},
		Admin:     AdminConfig{Listen: "127.0.0.1:8421"},
		Approvals: ApprovalsConfig{Timeout: Duration(10 * time.Minute)},
		Groups:    []GroupSeed{{Folder: "root"}, {Folder: "main"}},
		Routes:    []RouteSeed{{Match: map[string]string{"platform": "web"}, Target: "main"}},
	}
}

// defaultsFrom is Default with the adapters' tokens taken from the
// variables CONTRACT §2 gives as their defaults (token:
// "${TELEGRAM_BOT_TOKEN}" and so on), as if the file said so; a token the
// file gives replaces it.
func defaultsFrom(getenv func(string) string) Config {
	cfg := Default()
	a := &cfg.Adapters
	a.Telegram.Token = Secret(getenv("TELEGRAM_BOT_TOKEN"))
	a.Discord.Token = Secret(getenv("DISCORD_BOT_TOKEN"))
	a.Slack.BotToken = Secret(getenv("SLACK_BOT_TOKEN"))
	a.Slack.AppToken = Secret(getenv("SLACK_APP_TOKEN"))
	return cfg
}

// Parse reads YAML over the defaults, expanding ${VAR} and
// ${VAR:-default} from getenv in every string value, and validates the result.
// Errors name the key: `agent.timeout: "soon" is not a duration (line 7)`.
func Parse(data []byte, getenv func(string) string) (Config, error) {
	cfg := defaultsFrom(getenv)
	doc, err := oneDocument(data)
	if err != nil {
		return cfg, err
	}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if err := uniqueKeys("", root); err != nil {
			return cfg, err
		}
		d := decoder{refs: map[*yaml.Node]string{}, env: map[string]envValue{}, lines: map[string]int{}}
		if err := d.expandEnv("", root, getenv); err != nil {
			return cfg, err
		}
		// Lists in the file replace the defaults rather than append to them.
		if root.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(root.Content); i += 2 {
				switch root.Content[i].Value {
				case "groups":
					cfg.Groups = nil
				case "routes":
					cfg.Routes = nil
				}
			}
		}
		if err := d.decodeNode("", root, reflect.ValueOf(&cfg).Elem()); err != nil {
			return cfg, err
		}
		cfg.tokens = tokenSources{telegram: d.source("adapters.telegram.token"), discord: d.source("adapters.discord.token"),
			slackBot: d.source("adapters.slack.bot_token"), slackApp: d.source("adapters.slack.app_token")}
		return cfg, cfg.validate(d.env, d.lines)
	}
	return cfg, cfg.Validate()
}

// oneDocument decodes data, which must hold one YAML document: settings
// appended after a "---" line form a second one, which yaml.Unmarshal
// drops without a word. A later document with no content (a trailing
// "---", comments only) holds no settings and is allowed.
func oneDocument(data []byte) (yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return doc, yamlSyntaxError(data, err)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			return doc, nil
		}
		if err != nil {
			return doc, yamlSyntaxError(data, err)
		}
		if len(next.Content) > 0 && next.Content[0].Tag != "!!null" {
			return doc, fmt.Errorf("config: a second YAML document begins at line %d (\"---\"); only the first would be read, so its settings would be ignored: remove the \"---\" line (keys given twice are then reported) or move its keys above it", next.Line)
		}
	}
}

// yamlLine finds the line number in a YAML parser error ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`line (\d+):`)

// yamlSyntaxError wraps a YAML parser error and, when the line it names is
// indented with a tab, says so: the parser's own words ("found character
// that cannot start any token") do not, and a tab is invisible in most editors.
func yamlSyntaxError(data []byte, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		lines := strings.Split(string(data), "\n")
		// The parser names the line of the tab, or for a tab in a
		// block's indentation the line before it.
		for _, l := range []int{n, n + 1} {
			if l < 1 || l > len(lines) {
				continue
			}
			line := lines[l-1]
			if indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]; strings.Contains(indent, "\t") {
				return fmt.Errorf("parse yaml: %w (line %d is indented with a tab; YAML indents with spaces only)", err, l)
			}
		}
	}
	return fmt.Errorf("parse yaml: %w", err)
}

// Validate checks values; every error names its key. The adapters' tokens
// and secrets are not checked here but by ValidateSecrets, for run only.
func (c *Config) Validate() error { return c.validate(nil, nil) }

// validate is Validate for a config whose values under the key paths of env
// came from the environment: its errors name their variables instead. An
// error about a key path in lines (where each value was in the file) ends
// with its line.
func (c *Config) validate(env map[string]envValue, lines map[string]int) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		msg := redactEnv(key, fmt.Sprintf(format, args...), env)
		if line, ok := lines[key]; ok {
			msg += fmt.Sprintf(" (line %d)", line)
		}
		errs = append(errs, fmt.Errorf("%s: %s", key, msg))
	}
	if strings.TrimSpace(c.DataDir) == "" {
		bad("data_dir", "must not be empty")
	}
	if err := c.OperatorFolder.Validate(); err != nil {
		bad("operator_folder", "%v", err)
	} else if strings.Contains(string(c.OperatorFolder), "/") {
		bad("operator_folder", "%q: the operator folder must be a top-level folder such as root (a nested one could be reached by its ancestors)", c.OperatorFolder)
	}
	if _, err := time.LoadLocation(c.Timezone); err != nil || c.Timezone == "" || strings.EqualFold(c.Timezone, "local") {
		bad("timezone", "%q is not an IANA time zone such as UTC or Europe/Berlin", c.Timezone)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		bad("log.level", "%q: want debug, info, warn or error", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		bad("log.format", "%q: want text or json", c.Log.Format)
	}
	c.validateAgent(bad)
	c.validateBudgets(bad)
	if c.EngageTTL < 0 {
		bad("engage_ttl", "must not be negative")
	}
	c.validateLimits(bad)
	c.validateAdapters(bad)
	if c.Admin.Listen != "" {
		if _, _, err := splitListen(c.Admin.Listen); err != nil {
			bad("admin.listen", "%q is not host:port, e.g. 127.0.0.1:8421 (\"\" turns it off)", c.Admin.Listen)
		}
	}
	c.validateMCP(bad)
	c.validateNATS(bad)
	c.validateApprovals(bad)
	listed := map[groups.Folder]int{}
	for i, g := range c.Groups {
		if err := g.Folder.Validate(); err != nil {
			bad(fmt.Sprintf("groups[%d].folder", i), "%v", err)
		} else if first, twice := listed[g.Folder]; twice {
			// Which entry's mid_turn and approvals would hold is anyone's guess.
			bad(fmt.Sprintf("groups[%d].folder", i), "%q is listed twice (first at groups[%d]); merge the two entries", g.Folder, first)
		} else {
			listed[g.Folder] = i
		}
	}
	for i, r := range c.Routes {
		rt := r.Route()
		err := rt.ValidateNew()
		if err == nil {
			err = routing.CheckSeq(rt.Seq)
		}
		// Whether the target is a group is checked by run, which seeds
		// routes: (a group added with the CLI counts; cmd checkRouteTargets).
		if err != nil {
			bad(fmt.Sprintf("routes[%d]", i), "%v", err)
		}
	}
	return errors.Join(errs...)
}

// validateApprovals checks approvals.* and groups[].approvals.
func (c *Config) validateApprovals(bad func(string, string, ...any)) {
	if c.Approvals.Timeout <= 0 {
		bad("approvals.timeout", "must be positive, e.g. 10m (a request nobody decides by then is denied)")
	}
	for i, g := range c.Approvals.AgentTools {
		if _, err := path.Match(g, ""); err != nil || strings.TrimSpace(g) == "" {
			bad(fmt.Sprintf("approvals.agent_tools[%d]", i), "%q is not a glob over Claude Code tool names, e.g. Bash, Write or mcp__*", g)
		}
	}
	for i, g := range c.Groups {
		for j, jid := range g.Approvals.Approvers {
			if err := adapters.JID(jid).Validate(); err != nil {
				bad(fmt.Sprintf("groups[%d].approvals.approvers[%d]", i, j), "%q: want the JID of a person, e.g. telegram:user/12345 or web:user/ann (%v)", jid, err)
			} else if err := adapters.JID(jid).CheckPerson(); err != nil {
				bad(fmt.Sprintf("groups[%d].approvals.approvers[%d]", i, j), "%v (nobody could decide its requests)", err)
			}
		}
		if chat := g.Approvals.Chat; chat != "" {
			if err := adapters.JID(chat).Validate(); err != nil {
				bad(fmt.Sprintf("groups[%d].approvals.chat", i), "%q: want a chat JID, e.g. web:approvals (%v)", chat, err)
			}
		}
	}
}

// GroupApprovalsOf returns the approvals settings of the groups that have
// any, by folder.
func (c *Config) GroupApprovalsOf() map[groups.Folder]GroupApprovals {
	out := map[groups.Folder]GroupApprovals{}
	for _, g := range c.Groups {
		if len(g.Approvals.Approvers) > 0 || g.Approvals.Chat != "" {
			out[g.Folder] = g.Approvals
		}
	}
	return out
}

func (c *Config) validateLimits(bad func(string, string, ...any)) {
	for key, r := range map[string]RateConfig{"limits.turns_per_sender": c.Limits.TurnsPerSender, "limits.turns_per_chat": c.Limits.TurnsPerChat} {
		if r.Count < 0 {
			bad(key+".count", "%d: must be 0 (no limit) or more", r.Count)
		}
		if r.Count > 0 && r.Window <= 0 {
			bad(key+".window", "must be more than 0 when count is set, e.g. 1m")
		}
	}
	if c.Limits.MaxChain < 1 {
		bad("limits.max_chain", "%d: must be at least 1 (the default is 8)", c.Limits.MaxChain)
	}
	if s := c.Limits.StopBy; s != "anyone" && s != "approvers" {
		bad("limits.stop_by", "%q: want anyone or approvers", s)
	}
}

func (c *Config) validateAgent(bad func(string, string, ...any)) {
	if len(c.Agent.Command) == 0 || strings.TrimSpace(c.Agent.Command[0]) == "" {
		bad("agent.command", "must name a program, e.g. [\"switchboard\", \"demo-agent\"]")
	}
	if _, err := agent.ParseOutput(string(c.Agent.Output)); err != nil {
		bad("agent.output", "%q: want %s", c.Agent.Output, agent.OutputNames)
	}
	if c.Agent.Timeout <= 0 {
		bad("agent.timeout", "must be positive, e.g. 10m")
	}
	if c.Agent.MaxConcurrent < 1 || c.Agent.MaxConcurrent > 1024 {
		bad("agent.max_concurrent", "%d: want 1 to 1024", c.Agent.MaxConcurrent)
	}
	if !slices.Contains([]string{"bwrap", "auto", "none"}, c.Agent.Sandbox) {
		bad("agent.sandbox", "%q: want bwrap, auto or none", c.Agent.Sandbox)
	}
	for i, b := range c.Agent.Binds {
		if p := ExpandHome(b.Path); !filepath.IsAbs(p) {
			bad(fmt.Sprintf("agent.binds[%d].path", i), "%q: want an absolute path or one starting with ~/", b.Path)
		}
	}
	for i, n := range c.Agent.Env {
		if n == "" || strings.ContainsAny(n, "= ") {
			bad(fmt.Sprintf("agent.env[%d]", i), "%q is not an environment variable name", n)
		}
	}
	if !validMidTurn(c.Agent.MidTurn) {
		bad("agent.mid_turn", "%q: want queue, steer or interrupt", c.Agent.MidTurn)
	}
	for i, g := range c.Groups {
		if g.MidTurn != "" && !validMidTurn(g.MidTurn) {
			bad(fmt.Sprintf("groups[%d].mid_turn", i), "%q: want queue, steer or interrupt", g.MidTurn)
		}
	}
	c.validateInput(bad)
}

func validMidTurn(s string) bool { return ops.CheckMidTurn(s) == nil }

// validateInput checks agent.input: stream-json only for Claude Code run
// to read it (--input-format stream-json needs --output-format
// stream-json, which in -p needs --verbose), its output read as
// claude-stream.
func (c *Config) validateInput(bad func(string, string, ...any)) {
	switch c.Agent.Input {
	case "prompt":
		return
	case "stream-json":
	default:
		bad("agent.input", "%q: want prompt or stream-json", c.Agent.Input)
		return
	}
	if c.Agent.Output != agent.OutputClaudeStream {
		bad("agent.input", "stream-json needs agent.output: claude-stream (it is %q)", c.Agent.Output)
	}
	var missing []string
	for _, need := range [][2]string{{"--input-format", "stream-json"}, {"--output-format", "stream-json"}, {"--verbose", ""}} {
		if !hasFlag(c.Agent.Command, need[0], need[1]) {
			missing = append(missing, strings.TrimSpace(need[0]+" "+need[1]))
		}
	}
	if len(missing) > 0 {
		bad("agent.input", "stream-json needs Claude Code run with %s in agent.command (missing: %s)",
			"--input-format stream-json --output-format stream-json --verbose", strings.Join(missing, ", "))
	}
}

// hasFlag reports whether argv holds flag (with value, as the next
// argument or after "="; "" for a flag without one).
func hasFlag(argv []string, flag, value string) bool {
	for i, a := range argv {
		switch {
		case value == "" && a == flag:
			return true
		case a == flag+"="+value:
			return true
		case a == flag && i+1 < len(argv) && argv[i+1] == value:
			return true
		}
	}
	return false
}

func (c *Config) validateAdapters(bad func(string, string, ...any)) {
	a := c.Adapters
	if a.MaxDownloadMB < 1 || a.MaxDownloadMB > 2048 {
		bad("adapters.max_download_mb", "%d: want 1 to 2048 (megabytes per attachment)", a.MaxDownloadMB)
	}
	if a.Web.Enabled {
		if _, _, err := splitListen(a.Web.Listen); err != nil {
			bad("adapters.web.listen", "%q is not host:port, e.g. 127.0.0.1:8420", a.Web.Listen)
		}
	}
	if a.Telegram.Enabled && a.Telegram.WebhookURL != "" {
		if !strings.HasPrefix(a.Telegram.WebhookURL, "https://") {
			bad("adapters.telegram.webhook_url", "%q: Telegram posts to https:// URLs only", a.Telegram.WebhookURL)
		}
		if _, _, err := splitListen(a.Telegram.Listen); err != nil {
			bad("adapters.telegram.listen", "%q is not host:port; webhook mode needs the address your proxy forwards webhook_url to", a.Telegram.Listen)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Streams())) {
		l := a.Streams()[name]
		if !slices.Contains([]string{"native", "edit", "off"}, l.Stream) {
			bad("adapters."+name+".stream", "%q: want native (the platform's live reply), edit (one message edited) or off", l.Stream)
		}
		if d := time.Duration(l.StreamInterval); d < 100*time.Millisecond || d > time.Minute {
			bad("adapters."+name+".stream_interval", "%s: want 100ms to 1m between two updates of a live reply", d)
		}
	}
	if !slices.Contains([]string{"socket", "events"}, a.Slack.Mode) {
		bad("adapters.slack.mode", "%q: want socket or events", a.Slack.Mode)
	}
	if a.Slack.Enabled {
		if a.Slack.Mode == "events" {
			if _, _, err := splitListen(a.Slack.Listen); err != nil {
				bad("adapters.slack.listen", "%q is not host:port, e.g. 127.0.0.1:3000 (events mode serves POST /slack/events there)", a.Slack.Listen)
			}
		}
	}
}

// ValidateSecrets checks what only `switchboard run` needs: the tokens and
// secrets of the enabled adapters. The other commands work on the database
// and never talk to a platform, so a shell without the tokens exported can
// still run them.
func (c *Config) ValidateSecrets() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	a := c.Adapters
	if a.Telegram.Enabled {
		if a.Telegram.Token == "" {
			bad("adapters.telegram.token", "%s", emptyToken(c.tokens.telegram, "TELEGRAM_BOT_TOKEN"))
		}
		if n := len(a.Telegram.SecretToken); a.Telegram.WebhookURL != "" && (n < 16 || n > 256 || strings.TrimFunc(string(a.Telegram.SecretToken), secretTokenRune) != "") {
			bad("adapters.telegram.secret_token", "webhook mode needs a secret of 16 to 256 characters, only A-Z, a-z, 0-9, _ and - (Telegram refuses others), which Telegram sends with every update; e.g. openssl rand -hex 32")
		}
	}
	if a.Discord.Enabled && a.Discord.Token == "" {
		bad("adapters.discord.token", "%s", emptyToken(c.tokens.discord, "DISCORD_BOT_TOKEN"))
	}
	if a.Slack.Enabled {
		validateSlackSecrets(a.Slack, c.tokens, bad)
	}
	return errors.Join(errs...)
}

// Slack's token kinds, told apart by their prefixes.
const (
	slackBotPrefix  = "xoxb-" // Bot User OAuth Token (OAuth & Permissions)
	slackAppPrefix  = "xapp-" // App-Level Token (Basic Information), for Socket Mode
	slackUserPrefix = "xoxp-" // User OAuth Token: acts as a person, not the bot
)

func validateSlackSecrets(s SlackConfig, src tokenSources, bad func(string, string, ...any)) {
	bot, app := string(s.BotToken), string(s.AppToken)
	switch {
	case bot == "":
		bad("adapters.slack.bot_token", "%s", emptyToken(src.slackBot, "SLACK_BOT_TOKEN"))
	case strings.HasPrefix(bot, slackAppPrefix):
		bad("adapters.slack.bot_token", "starts with %s: that is the app-level token; the bot token starts with %s (Bot User OAuth Token, under OAuth & Permissions)", slackAppPrefix, slackBotPrefix)
	case strings.HasPrefix(bot, slackUserPrefix):
		bad("adapters.slack.bot_token", "starts with %s: that is a user token; the bot token starts with %s (Bot User OAuth Token, under OAuth & Permissions)", slackUserPrefix, slackBotPrefix)
	case !strings.HasPrefix(bot, slackBotPrefix):
		bad("adapters.slack.bot_token", "does not start with %s; use the Bot User OAuth Token (OAuth & Permissions)", slackBotPrefix)
	}
	if s.Mode == "socket" {
		switch {
		case app == "":
			bad("adapters.slack.app_token", "%s (socket mode needs the app-level token, xapp-)", emptyToken(src.slackApp, "SLACK_APP_TOKEN"))
		case strings.HasPrefix(app, slackBotPrefix):
			bad("adapters.slack.app_token", "starts with %s: that is the bot token; the app-level token starts with %s (Basic Information → App-Level Tokens, scope connections:write)", slackBotPrefix, slackAppPrefix)
		case !strings.HasPrefix(app, slackAppPrefix):
			bad("adapters.slack.app_token", "does not start with %s; create an app-level token with connections:write (Basic Information → App-Level Tokens)", slackAppPrefix)
		}
	}
	if s.Mode == "events" && s.SigningSecret == "" {
		bad("adapters.slack.signing_secret", "empty; events mode verifies every request with the app's signing secret (SLACK_SIGNING_SECRET)")
	}
}

// secretTokenRune reports whether Telegram allows r in a webhook secret_token.
func secretTokenRune(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// ExpandHome replaces a leading ~/ with the user's home directory.
func ExpandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// Route converts a seed into a routing.Route.
func (r RouteSeed) Route() routing.Route {
	return routing.Route{Seq: r.Seq, Match: r.Match, Target: r.Target, Mode: routing.Mode(r.Mode)}.Normalize()
}

// readError is the error for a config file that cannot be read; a
// --config naming no file says how to make one.
func readError(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read config: %w (--config names a file that is not there: check the path, or start one with cp config.example.yaml switchboard.yaml; without --config ./switchboard.yaml is read when present, else the built-in defaults)", err)
	}
	return fmt.Errorf("read config: %w", err)
}

// Load reads path; when path is "" it tries ./switchboard.yaml and
// falls back to the built-in defaults.
func Load(path string, getenv func(string) string) (Config, string, error) {
	explicit := path != ""
	if !explicit {
		path = "switchboard.yaml"
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		cfg := defaultsFrom(getenv)
		return cfg, "", cfg.Validate()
	}
	if err != nil {
		return Config{}, path, readError(err)
	}
	cfg, err := Parse(data, getenv)
	if err != nil {
		return cfg, path, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, path, nil
}

// validateMCP checks mcp.*: a listen address off loopback must have TLS,
// since its bearer tokens would otherwise cross the network in clear.
func (c *Config) validateMCP(bad func(key, format string, args ...any)) {
	m := c.MCP
	if m.Listen == "" {
		if m.TLSCert != "" || m.TLSKey != "" || m.URL != "" {
			bad("mcp.listen", "is empty (the endpoint is off) but mcp.tls_cert, mcp.tls_key or mcp.url is set; set mcp.listen, e.g. 127.0.0.1:8422")
		}
		return
	}
	host, _, err := splitListen(m.Listen)
	if err != nil {
		bad("mcp.listen", "%q is not host:port, e.g. 127.0.0.1:8422 (\"\" turns it off)", m.Listen)
		return
	}
	if (m.TLSCert == "") != (m.TLSKey == "") {
		bad("mcp.tls_cert", "mcp.tls_cert and mcp.tls_key go together: give both PEM files or neither")
	}
	if m.TLSCert == "" && !isLoopback(host) {
		bad("mcp.listen", "%q is not a loopback address, so agents' tokens would cross the network in clear: set mcp.tls_cert and mcp.tls_key (PEM files), or listen on 127.0.0.1", m.Listen)
	}
	if m.URL != "" {
		if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("mcp.url", "%q is not an http(s) URL such as https://gw.example.net:8422/mcp", m.URL)
		}
	}
}

// isLoopback: localhost or a loopback IP (not "", which is every address).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validateNATS checks agent.runner and nats.*.
func (c *Config) validateNATS(bad func(key, format string, args ...any)) {
	n := c.NATS
	if n.MaxFolderMB < 1 || n.MaxFolderMB > 65536 {
		bad("nats.max_folder_mb", "%d: want 1 to 65536 (megabytes of files in a group folder sent to workers)", n.MaxFolderMB)
	}
	for i, g := range n.SnapshotExclude {
		if _, err := path.Match(g, ""); err != nil || g == "" || strings.HasPrefix(g, "/") {
			bad(fmt.Sprintf("nats.snapshot_exclude[%d]", i), "%q is not a glob of a relative path, e.g. \"*.secret\" or \"config/token.json\"", g)
		}
	}
	if (n.TLSCert == "") != (n.TLSKey == "") {
		bad("nats.tls_cert", "nats.tls_cert and nats.tls_key go together: give both PEM files or neither")
	}
	switch c.Agent.Runner {
	case "local":
		return
	case "nats":
	default:
		bad("agent.runner", "%q: want local or nats", c.Agent.Runner)
		return
	}
	switch {
	case n.URL == "" && !n.Embedded:
		bad("nats.url", "is empty and nats.embedded is off; agent.runner nats needs one, e.g. nats.url: nats://nats.internal:4222 or nats.embedded: true")
	case n.URL != "" && n.Embedded:
		bad("nats.url", "is set and nats.embedded is on; choose one (the embedded server's URL is its nats.listen)")
	case n.URL != "" && n.Creds == "":
		bad("nats.creds", "is empty, and a NATS server of your own (nats.url) is used only with credentials: set nats.creds to the gateway's "+
			"credentials file (mint one with `switchboard nats gateway-creds --out FILE`; docs/scaling.md, \"Your own NATS server\")")
	}
	if n.Embedded {
		host, _, err := splitListen(n.Listen)
		switch {
		case err != nil:
			bad("nats.listen", "%q is not host:port, e.g. 127.0.0.1:4222", n.Listen)
		case n.TLSCert == "" && !isLoopback(host):
			bad("nats.listen", "%q is not a loopback address, so jobs (prompts, agent.env values, MCP tokens) would cross the network in clear: "+
				"set nats.tls_cert and nats.tls_key (PEM files; workers set nats.tls_ca), or listen on 127.0.0.1", n.Listen)
		}
	}
}

// splitListen splits a listen address as net.SplitHostPort does, and also
// refuses a port that no listener takes (":99999", "127.0.0.1:842O"): such
// an address failed only when the gateway started, with an error that asked
// whether another program was using it. A service name the system resolves
// (":http") is a port.
func splitListen(addr string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(addr)
	if err != nil {
		return "", "", err
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return "", "", err
	}
	return host, port, nil
}
