package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// TestE2EStopButton: on each platform's fake, through the real binary, a
// turn that runs past the button's delay shows a Stop button on its live
// reply (the turn said nothing yet, so the live reply shows a
// placeholder): a message the bot edits (a Telegram group, Discord), or the
// web chat's draft; a Slack stream in the thread cannot carry it, so there
// it is a message of its own (Slack's own edited live reply carries it:
// adapters/slack TestLiveEditedMessageCarriesButtons). Pressing it stops
// the turn (its processes gone, recorded stopped, the presser told
// "Stopping."); the live reply ends saying "Stopped." without the button,
// and it is the bot's one message; a message of its own is removed
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
			draft := func() shownMsg { return shownMsg{} }
			if p.live != nil {
				draft = p.live(t, g)
			}
			p.say(t, g, "a long job")
			onLive := !strings.HasPrefix(p.name, "slack")
			// shown is the message id as the chat shows it: a message,
			// else the live reply's draft.
			shown := func(id string) shownMsg {
				if m := p.message(t, g, id); m.found {
					return m
				}
				if d := draft(); d.id == id {
					return d
				}
				return shownMsg{}
			}

			var btn shownMsg
			testwait.For(t, 30*time.Second, p.name+": a Stop button", func() bool {
				for _, m := range append(p.bot(t, g), draft()) {
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
				m := shown(btn.id)
				return !m.found || len(m.buttons) == 0
			})
			if !onLive {
				return
			}
			if m := shown(btn.id); !m.found || !strings.Contains(m.text, "Stopped.") {
				t.Errorf("the live reply ends as %+v; want it to say Stopped.", m)
			}
			for _, m := range p.bot(t, g) {
				if m.id != btn.id {
					t.Errorf("the bot shows %+v besides its live reply; want the live reply alone", m)
				}
			}
		})
	}
}

// webDrafts reads the web room lobby's event stream as the page does, from
// now on: the newest draft of a live reply (its id is the final message's).
func webDrafts(t *testing.T, g *gw) func() shownMsg { return webRoomDrafts(t, g, "lobby") }

// webRoomDrafts is webDrafts of room.
func webRoomDrafts(t *testing.T, g *gw, room string) func() shownMsg {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+g.addr+"/api/rooms/"+room+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{}).Do(req) // no timeout: the stream is long
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("open the event stream: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	var mu sync.Mutex
	var newest shownMsg
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var d struct {
				Type, ID, Text string
				Buttons        []struct{ Data string }
			}
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || json.Unmarshal([]byte(data), &d) != nil || d.Type != "draft" {
				continue
			}
			m := shownMsg{id: d.ID, text: d.Text, found: true}
			for _, b := range d.Buttons {
				m.buttons = append(m.buttons, b.Data)
			}
			mu.Lock()
			newest = m
			mu.Unlock()
		}
	}()
	return func() shownMsg {
		mu.Lock()
		defer mu.Unlock()
		return newest
	}
}
