package main

import (
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// TestE2EStopButton: on each platform's fake, through the real binary, a
// turn that runs past the button's delay shows a Stop button: on its live
// reply where that is a message the bot edits (a Telegram group, Discord;
// the turn said nothing yet, so the live reply shows a placeholder), else
// in a message of its own (the web chat's draft, a Slack channel's live
// reply). Pressing it stops the turn (its processes gone, recorded
// stopped, the presser told "Stopping."); the live reply's last edit says
// "Stopped." without the button, and a message of its own is removed
// (deleted, or its button taken away) when the turn ends.
func TestE2EStopButton(t *testing.T) {
	bin := switchboardBinary(t)
	for _, p := range buttonPlatforms(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			dir := newE2E(t, e2eConfig{agent: "exec sleep 1000\n", adapters: p.adapters, sandbox: "none", timeout: "60s",
				routes: p.routes + "  - {match: {platform: web}, target: main}\n"})
			if out, err := runCLI(bin, dir, "group", "add", "main"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			g := startGW(t, dir)
			p.start(t, g)
			p.say(t, g, "a long job")

			onLive := p.name == "telegram" || p.name == "discord"
			var btn shownMsg
			testwait.For(t, 30*time.Second, p.name+": a Stop button", func() bool {
				for _, m := range p.bot(t, g) {
					if len(m.buttons) == 1 && strings.HasPrefix(m.buttons[0], "stop:") {
						btn = m
						return true
					}
				}
				return false
			})
			if onLive == strings.Contains(btn.text, "Press Stop") {
				t.Errorf("the Stop button shows under %q; want it on the live reply: %v", btn.text, onLive)
			}
			if len(folderAgents(t, dir, "main")) == 0 {
				t.Fatal("the agent is not running while its Stop button shows")
			}
			if got := p.press(t, g, btn.id, btn.buttons[0], true); !strings.Contains(got, "Stopping") {
				t.Errorf("the Stop press was answered %q; want Stopping.", got)
			}
			testwait.For(t, 10*time.Second, p.name+": the agent's processes gone", func() bool {
				return len(folderAgents(t, dir, "main")) == 0
			})
			testwait.For(t, 30*time.Second, p.name+": the turn recorded stopped", func() bool {
				return len(g.records("turn stopped", "", "")) == 1
			})
			testwait.For(t, 30*time.Second, p.name+": the Stop button removed", func() bool {
				m := p.message(t, g, btn.id)
				return !m.found || len(m.buttons) == 0
			})
			if !onLive {
				return
			}
			if m := p.message(t, g, btn.id); !m.found || !strings.Contains(m.text, "Stopped.") {
				t.Errorf("the live reply ends as %+v; want it to say Stopped.", m)
			}
			if bot := p.bot(t, g); len(bot) != 1 {
				t.Errorf("the bot shows %+v; want the live reply alone", bot)
			}
		})
	}
}
