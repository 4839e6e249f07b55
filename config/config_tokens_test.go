package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConfigTokensDefaultToTheirVariables: CONTRACT §2 gives the adapters'
// tokens the defaults "${TELEGRAM_BOT_TOKEN}", "${DISCORD_BOT_TOKEN}",
// "${SLACK_BOT_TOKEN}" and "${SLACK_APP_TOKEN}", so a config that enables an
// adapter and leaves its token out takes it from the environment (and the
// error for a missing one says "set TELEGRAM_BOT_TOKEN"). They were empty:
// exporting the variable did nothing, and run refused to start. A token
// written in the file, even "", still wins.
func TestConfigTokensDefaultToTheirVariables(t *testing.T) {
	vars := env(map[string]string{
		"TELEGRAM_BOT_TOKEN": "1:tg", "DISCORD_BOT_TOKEN": "dc",
		"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1",
	})
	yaml := "adapters: {telegram: {enabled: true}, discord: {enabled: true}, slack: {enabled: true}}"
	cfg, err := Parse([]byte(yaml), vars)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Adapters
	if a.Telegram.Token != "1:tg" || a.Discord.Token != "dc" || a.Slack.BotToken != "xoxb-1" || a.Slack.AppToken != "xapp-1" {
		t.Errorf("tokens not taken from the environment: telegram %v discord %v slack bot %v app %v",
			a.Telegram.Token == "1:tg", a.Discord.Token == "dc", a.Slack.BotToken == "xoxb-1", a.Slack.AppToken == "xapp-1")
	}
	if err := cfg.ValidateSecrets(); err != nil {
		t.Errorf("tokens from the environment refused: %v", err)
	}

	cfg, err = Parse([]byte("adapters: {telegram: {enabled: true, token: ''}, discord: {enabled: true, token: '${OTHER:-x}'}}"), vars)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Adapters.Telegram.Token != "" || cfg.Adapters.Discord.Token != "x" {
		t.Errorf("a token written in the file must win over the default's variable")
	}

	// No file at all: the built-in defaults take them too.
	t.Chdir(t.TempDir())
	cfg, _, err = Load("", vars)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Adapters.Telegram.Token != "1:tg" {
		t.Errorf("built-in defaults: telegram token not taken from TELEGRAM_BOT_TOKEN")
	}
	if _, err := os.Stat(filepath.Join(".", "switchboard.yaml")); err == nil {
		t.Fatal("unexpected switchboard.yaml")
	}
}
