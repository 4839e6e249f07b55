package main

import (
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// TestE2EStopButton: on each platform's fake, through the real binary, a
// turn that runs past the button's delay shows a Stop button in a message
// of its own; pressing it stops the turn (its processes gone, recorded
// stopped, the presser told "Stopping."), and the button's message is
// deleted when the turn ends (every platform here can delete the bot's
// messages; web chat pages are told by a "delete" event).
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
			testwait.For(t, 30*time.Second, p.name+": the Stop button's message deleted", func() bool {
				return !p.message(t, g, btn.id).found
			})
		})
	}
}
