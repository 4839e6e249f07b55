package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"switchboard/agent"
	"switchboard/groups"
	"switchboard/routing"
)

// Config is the YAML configuration (CONTRACT §2). Sections are small structs
// that are handed to the parts that use them; nothing below cmd sees Config.
type Config struct {
	DataDir        string         `yaml:"data_dir"`
	OperatorFolder string         `yaml:"operator_folder"`
	Timezone       string         `yaml:"timezone"`
	Log            LogConfig      `yaml:"log"`
	Agent          AgentConfig    `yaml:"agent"`
	EngageTTL      Duration       `yaml:"engage_ttl"`
	Adapters       AdaptersConfig `yaml:"adapters"`
	Admin          AdminConfig    `yaml:"admin"`
	Groups         []GroupSeed    `yaml:"groups"`
	Routes         []RouteSeed    `yaml:"routes"`
	Budgets        []BudgetSeed   `yaml:"budgets"`
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
	// claude-json agents get --max-budget-usd (cmd_budget.go). 0: none.
	MaxTurnUSD float64 `yaml:"max_turn_usd"`
}

// AdminConfig is the operator's HTTP listener: /metrics, /healthz, /readyz
// and a status page. An empty Listen turns it off.
type AdminConfig struct {
	Listen string `yaml:"listen"`
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

type WebConfig struct {
	Enabled bool   `yaml:"enabled"`
	Listen  string `yaml:"listen"`
}

type TelegramConfig struct {
	Enabled bool   `yaml:"enabled"`
	Token   Secret `yaml:"token"`
	APIURL  string `yaml:"api_url"`
	// Webhook mode instead of long polling: Telegram posts to WebhookURL
	// (public HTTPS), which your proxy forwards to Listen.
	WebhookURL  string `yaml:"webhook_url"`
	Listen      string `yaml:"listen"`
	SecretToken Secret `yaml:"secret_token"`
}

type DiscordConfig struct {
	Enabled bool   `yaml:"enabled"`
	Token   Secret `yaml:"token"`
	APIURL  string `yaml:"api_url"`
}

type SlackConfig struct {
	Enabled       bool   `yaml:"enabled"`
	BotToken      Secret `yaml:"bot_token"`
	AppToken      Secret `yaml:"app_token"`
	Mode          string `yaml:"mode"`
	SigningSecret Secret `yaml:"signing_secret"`
	Listen        string `yaml:"listen"`
	APIURL        string `yaml:"api_url"`
}

// GroupSeed is a group created at start if missing.
type GroupSeed struct {
	Folder string `yaml:"folder"`
}

// RouteSeed is a route created at the first start of a new database.
type RouteSeed struct {
	Match  map[string]string `yaml:"match"`
	Target string            `yaml:"target"`
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

// DefaultConfig is used when no config file exists; it matches config.example.yaml.
func DefaultConfig() Config {
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
		},
		EngageTTL: Duration(10 * time.Minute),
		Adapters: AdaptersConfig{
			Web:           WebConfig{Enabled: true, Listen: "127.0.0.1:8420"},
			Slack:         SlackConfig{Mode: "socket"},
			MaxDownloadMB: 25,
		},
		Admin:  AdminConfig{Listen: "127.0.0.1:8421"},
		Groups: []GroupSeed{{Folder: "root"}, {Folder: "main"}},
		Routes: []RouteSeed{{Match: map[string]string{"platform": "web"}, Target: "main"}},
	}
}

// ParseConfig reads YAML over the defaults, expanding ${VAR} and
// ${VAR:-default} from getenv in every string value, and validates the result.
// Errors name the key: `agent.timeout: "soon" is not a duration (line 7)`.
func ParseConfig(data []byte, getenv func(string) string) (Config, error) {
	cfg := DefaultConfig()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfg, fmt.Errorf("parse yaml: %w", err)
	}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if err := expandEnv("", root, getenv); err != nil {
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
		if err := decodeNode("", root, reflect.ValueOf(&cfg).Elem()); err != nil {
			return cfg, err
		}
	}
	return cfg, cfg.Validate()
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces variable references in every scalar under n; path is
// n's key path, so that a malformed reference names its key.
func expandEnv(path string, n *yaml.Node, getenv func(string) string) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			m := envRef.FindStringSubmatch(ref)
			if v := getenv(m[1]); v != "" || m[2] == "" {
				return v
			}
			return m[3]
		})
		if strings.Contains(n.Value, "${") {
			return fmt.Errorf("%s: malformed variable reference %q (line %d); write ${NAME} or ${NAME:-default}", orRoot(path), n.Value, n.Line)
		}
	}
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		if n.Kind == yaml.MappingNode {
			if i%2 == 0 {
				continue // keys are not expanded
			}
			p = n.Content[i-1].Value
			if path != "" {
				p = path + "." + p
			}
		}
		if err := expandEnv(p, c, getenv); err != nil {
			return err
		}
	}
	return nil
}

var durationType = reflect.TypeOf(Duration(0))

// decodeNode decodes n into v, walking structs by their yaml tags so that an
// unknown key or a bad value is reported with its full key path.
func decodeNode(path string, n *yaml.Node, v reflect.Value) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Tag == "!!null" {
		return nil
	}
	switch {
	case v.Type() == durationType:
		d, err := time.ParseDuration(n.Value)
		if err != nil || n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: %q is not a duration like 30s, 10m or 1h (line %d)", path, n.Value, n.Line)
		}
		v.SetInt(int64(d))
		return nil
	case v.Kind() == reflect.Struct:
		return decodeStruct(path, n, v)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: want a list (line %d)", path, n.Line)
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := decodeNode(fmt.Sprintf("%s[%d]", path, i), c, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		return fmt.Errorf("%s: %s (line %d)", path, describeType(v.Type(), n), n.Line)
	}
	return nil
}

func decodeStruct(path string, n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: want a mapping of keys (line %d)", orRoot(path), n.Line)
	}
	t := v.Type()
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		idx := -1
		var names []string
		for f := 0; f < t.NumField(); f++ {
			name := strings.Split(t.Field(f).Tag.Get("yaml"), ",")[0]
			names = append(names, name)
			if name == key {
				idx = f
			}
		}
		full := key
		if path != "" {
			full = path + "." + key
		}
		if idx < 0 {
			return fmt.Errorf("%s: unknown key (line %d); valid keys here: %s", full, n.Content[i].Line, strings.Join(names, ", "))
		}
		if err := decodeNode(full, n.Content[i+1], v.Field(idx)); err != nil {
			return err
		}
	}
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "config"
	}
	return path
}

func describeType(t reflect.Type, n *yaml.Node) string {
	got := n.Value
	if n.Kind != yaml.ScalarNode {
		got = map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}[n.Kind]
	} else {
		got = strconv.Quote(got)
	}
	switch t.Kind() {
	case reflect.Bool:
		return got + " is not true or false"
	case reflect.Int:
		return got + " is not a whole number"
	case reflect.Float64:
		return got + " is not a number"
	case reflect.Slice:
		return "want a list of strings, got " + got
	case reflect.Map:
		return "want a mapping of key: glob, got " + got
	}
	return "want a string, got " + got
}

// Validate checks values; every error names its key. The adapters' tokens
// and secrets are not checked here but by ValidateSecrets, for run only.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if strings.TrimSpace(c.DataDir) == "" {
		bad("data_dir", "must not be empty")
	}
	if err := groups.Validate(c.OperatorFolder); err != nil {
		bad("operator_folder", "%v", err)
	} else if strings.Contains(c.OperatorFolder, "/") {
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
	c.validateAdapters(bad)
	if c.Admin.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Admin.Listen); err != nil {
			bad("admin.listen", "%q is not host:port, e.g. 127.0.0.1:8421 (\"\" turns it off)", c.Admin.Listen)
		}
	}
	known := map[string]bool{c.OperatorFolder: true}
	for i, g := range c.Groups {
		if err := groups.Validate(g.Folder); err != nil {
			bad(fmt.Sprintf("groups[%d].folder", i), "%v", err)
		}
		known[g.Folder] = true
	}
	for i, r := range c.Routes {
		rt := r.Route()
		if err := rt.Validate(); err != nil {
			bad(fmt.Sprintf("routes[%d]", i), "%v", err)
		} else if !known[r.Target] {
			bad(fmt.Sprintf("routes[%d].target", i), "group %q is not listed under groups", r.Target)
		}
	}
	return errors.Join(errs...)
}

func (c *Config) validateAgent(bad func(string, string, ...any)) {
	if len(c.Agent.Command) == 0 || strings.TrimSpace(c.Agent.Command[0]) == "" {
		bad("agent.command", "must name a program, e.g. [\"switchboard\", \"demo-agent\"]")
	}
	if _, err := agent.ParseOutput(string(c.Agent.Output)); err != nil {
		bad("agent.output", "%q: want text, claude-json or none", c.Agent.Output)
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
		if p := expandHome(b.Path); !filepath.IsAbs(p) {
			bad(fmt.Sprintf("agent.binds[%d].path", i), "%q: want an absolute path or one starting with ~/", b.Path)
		}
	}
	for i, n := range c.Agent.Env {
		if n == "" || strings.ContainsAny(n, "= ") {
			bad(fmt.Sprintf("agent.env[%d]", i), "%q is not an environment variable name", n)
		}
	}
}

func (c *Config) validateAdapters(bad func(string, string, ...any)) {
	a := c.Adapters
	if a.MaxDownloadMB < 1 || a.MaxDownloadMB > 2048 {
		bad("adapters.max_download_mb", "%d: want 1 to 2048 (megabytes per attachment)", a.MaxDownloadMB)
	}
	if a.Web.Enabled {
		if _, _, err := net.SplitHostPort(a.Web.Listen); err != nil {
			bad("adapters.web.listen", "%q is not host:port, e.g. 127.0.0.1:8420", a.Web.Listen)
		}
	}
	if a.Telegram.Enabled && a.Telegram.WebhookURL != "" {
		if !strings.HasPrefix(a.Telegram.WebhookURL, "https://") {
			bad("adapters.telegram.webhook_url", "%q: Telegram posts to https:// URLs only", a.Telegram.WebhookURL)
		}
		if _, _, err := net.SplitHostPort(a.Telegram.Listen); err != nil {
			bad("adapters.telegram.listen", "%q is not host:port; webhook mode needs the address your proxy forwards webhook_url to", a.Telegram.Listen)
		}
	}
	if !slices.Contains([]string{"socket", "events"}, a.Slack.Mode) {
		bad("adapters.slack.mode", "%q: want socket or events", a.Slack.Mode)
	}
	if a.Slack.Enabled {
		if a.Slack.Mode == "events" {
			if _, _, err := net.SplitHostPort(a.Slack.Listen); err != nil {
				bad("adapters.slack.listen", "%q is not host:port, e.g. 127.0.0.1:3000 (events mode serves POST /slack/events there)", a.Slack.Listen)
			}
		}
		if a.Slack.APIURL != "" && !strings.HasSuffix(a.Slack.APIURL, "/") {
			bad("adapters.slack.api_url", "%q: the Web API base ends with a slash, e.g. http://host:port/api/", a.Slack.APIURL)
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
			bad("adapters.telegram.token", "empty; set TELEGRAM_BOT_TOKEN or disable the adapter")
		}
		if a.Telegram.WebhookURL != "" && len(a.Telegram.SecretToken) < 16 {
			bad("adapters.telegram.secret_token", "webhook mode needs a secret of at least 16 characters (A-Z, a-z, 0-9, _ and -), which Telegram sends with every update")
		}
	}
	if a.Discord.Enabled && a.Discord.Token == "" {
		bad("adapters.discord.token", "empty; set DISCORD_BOT_TOKEN or disable the adapter")
	}
	if a.Slack.Enabled {
		validateSlackSecrets(a.Slack, bad)
	}
	return errors.Join(errs...)
}

// Slack's token kinds, told apart by their prefixes.
const (
	slackBotPrefix  = "xoxb-" // Bot User OAuth Token (OAuth & Permissions)
	slackAppPrefix  = "xapp-" // App-Level Token (Basic Information), for Socket Mode
	slackUserPrefix = "xoxp-" // User OAuth Token: acts as a person, not the bot
)

func validateSlackSecrets(s SlackConfig, bad func(string, string, ...any)) {
	bot, app := string(s.BotToken), string(s.AppToken)
	switch {
	case bot == "":
		bad("adapters.slack.bot_token", "empty; set SLACK_BOT_TOKEN or disable the adapter")
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
			bad("adapters.slack.app_token", "empty; socket mode needs an app-level token (SLACK_APP_TOKEN)")
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

// expandHome replaces a leading ~/ with the user's home directory.
func expandHome(p string) string {
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

// loadConfig reads path; when path is "" it tries ./switchboard.yaml and
// falls back to the built-in defaults.
func loadConfig(path string, getenv func(string) string) (Config, string, error) {
	explicit := path != ""
	if !explicit {
		path = "switchboard.yaml"
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		cfg := DefaultConfig()
		return cfg, "", cfg.Validate()
	}
	if err != nil {
		return Config{}, path, fmt.Errorf("read config: %w", err)
	}
	cfg, err := ParseConfig(data, getenv)
	if err != nil {
		return cfg, path, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, path, nil
}
