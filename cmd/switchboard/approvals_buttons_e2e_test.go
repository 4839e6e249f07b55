package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/discord/discordtest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// askAgent is an agent (after agentPrologue) that calls send, which the
// tests' grants make an ask, through the real binary's mcp-bridge: "ran N"
// to its chat, N its turn's number. It keeps the bridge's answers in
// $out/mcp-N.
func askAgent(bin string) string {
	return `call() { printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send","arguments":{"chat_jid":"%s","text":"ran %s"}}}\n' "$SWITCHBOARD_CHAT_JID" "$n"; }
{
  ` + testmcp.ShellHandshake(testmcp.Options{Client: "sh"}) + `
  call
  while ! grep -q '"id":2,' "$out/mcp-$n.tmp"; do sleep 0.05; done
} | ` + quoteAll([]string{bin})[0] + ` mcp-bridge > "$out/mcp-$n.tmp"
mv "$out/mcp-$n.tmp" "$out/mcp-$n"
`
}

// shownMsg is a message with buttons as a platform's fake shows it.
type shownMsg struct {
	id      string
	text    string
	buttons []string // their data
	found   bool
}

// buttonPlatform drives one platform's fake for the approval tests.
type buttonPlatform struct {
	name     string
	adapters string // YAML under adapters:
	routes   string
	chat     string // the routed chat's JID
	approver string // the approver's JID; the fake's default user
	stranger string // another person's JID
	// start waits until the gateway g reached the fake.
	start func(t *testing.T, g *gw)
	// say posts a user message that starts a turn.
	say func(t *testing.T, g *gw, text string)
	// bot lists the bot's messages in the routed chat.
	bot func(t *testing.T, g *gw) []shownMsg
	// press presses the button with data under message id, as the
	// approver or the stranger, and returns what the presser alone saw.
	press func(t *testing.T, g *gw, id, data string, approver bool) string
	// live, when set, watches the live replies that are not messages the
	// bot lists (the web chat's drafts) from now on: the newest one.
	live func(t *testing.T, g *gw) func() shownMsg
}

func buttonPlatforms(t *testing.T) []buttonPlatform {
	tgChat := int64(telegramtest.GroupID)
	return []buttonPlatform{
		{
			name: "web", chat: "web:lobby", approver: "web:user/ann", stranger: "web:user/bob",
			start: func(*testing.T, *gw) {},
			say:   func(t *testing.T, g *gw, text string) { g.mustPost("lobby", "ann", text) },
			bot: func(t *testing.T, g *gw) []shownMsg {
				var out struct {
					Messages []struct {
						ID, Text string
						FromBot  bool `json:"from_bot"`
						Deleted  bool
						Buttons  []struct{ Data string }
					}
				}
				resp, err := g.http.Get("http://" + g.addr + "/api/rooms/lobby/messages")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
					t.Fatal(err)
				}
				var ms []shownMsg
				for _, m := range out.Messages {
					if m.FromBot && !m.Deleted {
						s := shownMsg{id: m.ID, text: m.Text, found: true}
						for _, b := range m.Buttons {
							s.buttons = append(s.buttons, b.Data)
						}
						ms = append(ms, s)
					}
				}
				return ms
			},
			press: func(t *testing.T, g *gw, id, data string, approver bool) string {
				sender := "bob"
				if approver {
					sender = "ann"
				}
				body, _ := json.Marshal(map[string]string{"data": data, "sender": sender, "message": id})
				resp, err := g.http.Post("http://"+g.addr+"/api/rooms/lobby/press", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out struct{ Answer string }
				if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("press %s: %s (%v)", data, resp.Status, err)
				}
				return out.Answer
			},
			live: webDrafts,
		},
		func() buttonPlatform {
			tg := telegramtest.New(t)
			return buttonPlatform{
				name: "telegram", chat: "telegram:group/1001234", approver: "telegram:user/" + strconv.Itoa(telegramtest.UserID), stranger: "telegram:user/8",
				adapters: `  telegram: {enabled: true, token: "` + telegramtest.Token + `", api_url: "` + tg.URL() + `"}` + "\n",
				routes:   "  - {match: {chat_jid: \"telegram:group/1001234\"}, target: main}\n",
				start:    func(*testing.T, *gw) {},
				say: func(t *testing.T, g *gw, text string) {
					msg, _ := tg.UserMessage(tgChat, text, true, 0, 0)
					tg.Push("message", msg)
				},
				bot: func(t *testing.T, g *gw) []shownMsg {
					var ms []shownMsg
					for _, m := range tg.Messages(tgChat) {
						if m.FromBot && !m.Deleted {
							s := shownMsg{id: strconv.Itoa(m.ID), text: m.Text, found: true}
							for _, b := range m.Buttons {
								s.buttons = append(s.buttons, b.Data)
							}
							ms = append(ms, s)
						}
					}
					return ms
				},
				press: func(t *testing.T, g *gw, id, data string, approver bool) string {
					n, _ := strconv.Atoi(id)
					if approver {
						return tg.WaitAnswered(t, tg.Press(tgChat, n, data))
					}
					return tg.WaitAnswered(t, tg.PressBy(tgChat, n, data, 8, "Bob"))
				},
			}
		}(),
		func() buttonPlatform {
			dc := discordtest.New(t)
			return buttonPlatform{
				name: "discord", chat: "discord:" + discordtest.GuildID + "/" + discordtest.Channel, approver: "discord:user/" + discordtest.UserID, stranger: "discord:user/8",
				adapters: `  discord: {enabled: true, token: "` + discordtest.Token + `", api_url: "` + dc.URL() + `"}` + "\n",
				routes:   "  - {match: {chat_jid: \"discord:" + discordtest.GuildID + "/" + discordtest.Channel + "\"}, target: main}\n",
				start:    func(t *testing.T, _ *gw) { dc.WaitFor(t, "the bot connected", dc.Connected) },
				say: func(t *testing.T, g *gw, text string) {
					dc.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: text, MentionBot: true})
				},
				bot: func(t *testing.T, g *gw) []shownMsg {
					var ms []shownMsg
					for _, m := range dc.Messages(discordtest.Channel) {
						if m.AuthorID == discordtest.BotID && !m.Deleted {
							s := shownMsg{id: m.ID, text: m.Content, found: true}
							for _, b := range m.Buttons {
								s.buttons = append(s.buttons, b.CustomID)
							}
							ms = append(ms, s)
						}
					}
					return ms
				},
				press: func(t *testing.T, g *gw, id, data string, approver bool) string {
					var iid string
					if approver {
						iid = dc.UserPresses(discordtest.Channel, id, data)
					} else {
						iid = dc.PressBy(discordtest.Channel, id, data, "8", "Bob")
					}
					a := dc.WaitAnswered(t, iid)
					if a.Type != 4 || a.Flags&64 == 0 || a.Late {
						t.Errorf("press %s answered %+v; want an ephemeral message in time", data, a)
					}
					return a.Content
				},
			}
		}(),
		slackButtons(t, "socket"),
		slackButtons(t, "events"),
	}
}

// message is the bot's message id as p's fake shows it now.
func (p buttonPlatform) message(t *testing.T, g *gw, id string) shownMsg {
	for _, m := range p.bot(t, g) {
		if m.id == id {
			return m
		}
	}
	return shownMsg{}
}

// waitRequest waits for an approval request with its three buttons that
// is not among seen, and returns it.
func (p buttonPlatform) waitRequest(t *testing.T, g *gw, seen map[string]bool) shownMsg {
	t.Helper()
	var got shownMsg
	testwait.For(t, 30*time.Second, p.name+": an approval request with buttons", func() bool {
		for _, m := range p.bot(t, g) {
			if len(m.buttons) == 3 && strings.HasPrefix(m.buttons[0], "appr:") && !seen[m.id] {
				got = m
				return true
			}
		}
		return false
	})
	seen[got.id] = true
	return got
}

// waitShown waits until the message id shows want (and no buttons).
func (p buttonPlatform) waitShown(t *testing.T, g *gw, id, want string) shownMsg {
	t.Helper()
	var m shownMsg
	testwait.For(t, 30*time.Second, fmt.Sprintf("%s: message %s edited to show %q without buttons", p.name, id, want), func() bool {
		m = p.message(t, g, id)
		return strings.Contains(m.text, want) && len(m.buttons) == 0
	})
	return m
}

// TestE2EApprovalButtons: on each platform's fake, through the real binary,
// an ask call posts a request with buttons; a non-approver's press is
// answered privately "not yours" and changes nothing; the approver's Allow
// runs the tool and the request message shows who allowed it, its buttons
// gone; a second press changes nothing and is answered with the decision;
// a request pending when the gateway is killed (kill -9) is shown expired
// after the restart, and a late press on it is answered "expired".
func TestE2EApprovalButtons(t *testing.T) {
	bin := switchboardBinary(t)
	for _, p := range buttonPlatforms(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			dir := newE2E(t, e2eConfig{agent: askAgent(bin), adapters: p.adapters, sandbox: "none", timeout: "60s",
				routes: p.routes + "  - {match: {platform: web}, target: main}\n"})
			for _, args := range [][]string{{"group", "add", "main"}, {"grants", "set", "main", "?send"},
				{"approvals", "approvers", "main", p.approver}} {
				if out, err := runCLI(bin, dir, args...); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			}
			g := startGW(t, dir)
			p.start(t, g)
			seen := map[string]bool{}

			p.say(t, g, "go")
			req := p.waitRequest(t, g, seen)
			if !strings.Contains(req.text, "wants to call") || !strings.Contains(req.text, "send") || !strings.Contains(req.text, "ran 1") {
				t.Errorf("request shows:\n%s", req.text)
			}
			allow, deny := req.buttons[0], req.buttons[2]
			if !strings.HasSuffix(allow, ":allow") || !strings.HasSuffix(deny, ":deny") {
				t.Fatalf("buttons %v", req.buttons)
			}

			// A non-approver: told privately, nothing changes.
			if got := p.press(t, g, req.id, allow, false); !strings.Contains(got, "Not yours to approve") {
				t.Errorf("a non-approver's press was answered %q", got)
			}
			if m := p.message(t, g, req.id); m.text != req.text || len(m.buttons) != 3 {
				t.Errorf("a non-approver's press changed the request: %+v", m)
			}

			// The approver allows: the tool runs, the request shows who allowed it.
			who := "Allowed once by " + p.approver
			if got := p.press(t, g, req.id, allow, true); !strings.Contains(got, who) {
				t.Errorf("the approver's Allow was answered %q", got)
			}
			testwait.For(t, 30*time.Second, p.name+": the allowed send's message", func() bool {
				for _, m := range p.bot(t, g) {
					if m.text == "ran 1" {
						return true
					}
				}
				return false
			})
			p.waitShown(t, g, req.id, who)
			// In the chat's history once, as the bot's, showing the decision.
			id := strings.Split(allow, ":")[1]
			testwait.For(t, 10*time.Second, p.name+": the request in the chat's history", func() bool {
				st := openDB(t, dir+"/data")
				defer st.Close()
				ms, err := st.MessagesAfter(context.Background(), adapters.JID(p.chat), 0, 1000)
				if err != nil {
					t.Fatal(err)
				}
				var found []store.Message
				for _, m := range ms {
					if strings.Contains(m.Text, "(request `"+id+"`)") {
						found = append(found, m)
					}
				}
				if len(found) > 1 {
					t.Fatalf("the request is %d times in the chat's history: %+v", len(found), found)
				}
				return len(found) == 1 && found[0].FromBot && strings.Contains(found[0].Text, who)
			})

			// A second press: answered with the decision, nothing changes.
			if got := p.press(t, g, req.id, deny, true); !strings.Contains(got, who) {
				t.Errorf("a press after the decision was answered %q", got)
			}
			if m := p.message(t, g, req.id); !strings.Contains(m.text, who) || len(m.buttons) != 0 {
				t.Errorf("a press after the decision changed the request: %+v", m)
			}

			// Killed while a request waits: after the restart it shows
			// expired, and a late press is answered so.
			p.say(t, g, "go again")
			req = p.waitRequest(t, g, seen)
			// Killed once the gateway recorded where the request shows
			// (a crash before that leaves buttons a press finds expired).
			id = strings.Split(req.buttons[0], ":")[1]
			testwait.For(t, 10*time.Second, "the request recorded", func() bool {
				return len(g.records("approval requested", "approval", id)) > 0
			})
			g.kill()
			g = startGW(t, dir)
			p.start(t, g)
			p.waitShown(t, g, req.id, "Expired")
			if got := p.press(t, g, req.id, req.buttons[0], true); !strings.Contains(got, "Expired") {
				t.Errorf("a press after the restart was answered %q", got)
			}
			for _, m := range p.bot(t, g) {
				if m.text == "ran 2" {
					t.Errorf("the expired request's call ran")
				}
			}
		})
	}
}

// slackButtons is Slack's fake for the button tests, in Socket Mode or
// over the Events API (presses posted, signed, to the interactivity URL).
func slackButtons(t *testing.T, mode string) buttonPlatform {
	s := slacktest.New(t)
	name := "slack"
	if mode == "events" {
		name = "slack-events"
	}
	return buttonPlatform{
		name: name, chat: "slack:" + slacktest.Team + "/channel/C1", approver: "slack:" + slacktest.Team + "/user/U1", stranger: "slack:" + slacktest.Team + "/user/U2",
		adapters: "  slack: {enabled: true, mode: " + mode + `, listen: "127.0.0.1:0", bot_token: ` + slacktest.BotToken + ", app_token: " + slacktest.AppToken +
			", signing_secret: " + slacktest.Secret + `, api_url: "` + s.URL() + `"}` + "\n",
		routes: "  - {match: {platform: slack}, target: main}\n",
		start: func(t *testing.T, g *gw) {
			if mode == "socket" {
				testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
				return
			}
			testwait.For(t, 20*time.Second, "slack events listener", func() bool {
				rec := g.findLog("slack events api listening")
				if rec != nil {
					base := "http://" + rec["addr"].(string)
					s.EventsURL, s.InteractivityURL = base+"/slack/events", base+slack.InteractivityPath
				}
				return rec != nil
			})
		},
		say: func(t *testing.T, g *gw, text string) {
			if _, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> " + text, Mention: true}); err != nil {
				t.Fatal(err)
			}
		},
		bot: func(t *testing.T, g *gw) []shownMsg {
			var ms []shownMsg
			for _, m := range s.Messages("C1") {
				if m.User == slacktest.BotUser && !m.Deleted {
					sm := shownMsg{id: m.TS, text: m.Text, found: true}
					for _, b := range m.Buttons {
						sm.buttons = append(sm.buttons, b.Value)
					}
					ms = append(ms, sm)
				}
			}
			return ms
		},
		press: func(t *testing.T, g *gw, id, data string, approver bool) string {
			user := "U2"
			if approver {
				user = "U1"
			}
			status, shown, err := s.UserPresses("C1", id, user, data)
			if err != nil || mode == "events" && status != http.StatusOK {
				t.Fatalf("press %s: status %d, %v", data, status, err)
			}
			var texts []string
			for _, e := range shown {
				texts = append(texts, e.Text)
			}
			return strings.Join(texts, "\n")
		},
	}
}
