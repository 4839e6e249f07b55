package gateway

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord"
	"switchboard/adapters/discord/discordtest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
	"switchboard/adapters/telegram"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/store"
)

// hostileRequest is an approval request whose tool name and arguments (the
// agent chooses both) try to break out of their code: backticks and fences,
// HTML and entities, and every platform's mentions.
func hostileRequest() (store.Approval, string) {
	const cmd = "echo `id` && cat <<EOF </pre><b>x</b> <img src=x onerror=alert(1)> &amp; & *bold* _it_ ~s~ [l](https://evil.example)\n" +
		"```\n@everyone @here <@123> <@&456> <!channel> <!here> <#C1|general> <https://evil.example|click>\n```"
	a := store.Approval{ID: "ab12cd", Folder: "main", Tool: "Ba`sh <b>&amp; @everyone",
		Args: renderArgs(map[string]any{"command": cmd, "description": "```\n@here"})}
	return a, cmd
}

// TestApprovalRequestRendersSafelyTelegram: the request reaches Telegram as
// HTML it accepts (no plain-text fallback), the title bold and the
// arguments in a pre block, and the chat shows every hostile character of
// them as text.
func TestApprovalRequestRendersSafelyTelegram(t *testing.T) {
	f := telegramtest.New(t)
	tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: f.URL(), PollTimeout: 2 * time.Second, PerChat: -1, PerGroup: -1, Global: -1})
	adaptertest.Start(t, tg, adaptertest.NewHost())
	a, _ := hostileRequest()
	if _, err := tg.SendButtons(t.Context(), adapters.Outbound{Chat: "telegram:group/1001234", Text: requestText(a)}, requestButtons(a.ID)); err != nil {
		t.Fatal(err)
	}
	msgs := f.Messages(telegramtest.GroupID)
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the chat, want the request", len(msgs))
	}
	m := msgs[0]
	if !strings.HasPrefix(m.Raw, "<b>Approval needed</b>") || strings.Count(m.Raw, "<pre>") != 1 {
		t.Errorf("the request was not sent as formatted HTML (title bold, one pre block):\n%s", m.Raw)
	}
	if strings.Count(m.Raw, "<b>") != 1 || strings.Count(m.Raw, "</pre>") != 1 || strings.Contains(m.Raw, "<img") {
		t.Errorf("the tool name or arguments reached Telegram as markup:\n%s", m.Raw)
	}
	wantShown(t, "Telegram", m.Text, a)
	if len(m.Buttons) != 3 {
		t.Errorf("buttons %+v, want three", m.Buttons)
	}
}

// TestApprovalRequestRendersSafelySlack: the request's Block Kit section is
// mrkdwn with no control sequence in it (<!channel>, <@U…>, links: all
// escaped), its arguments in one code block; the fallback text is escaped
// too, and nothing asks Slack to link names.
func TestApprovalRequestRendersSafelySlack(t *testing.T) {
	s := slacktest.New(t)
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
		APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond})
	adaptertest.Start(t, a, adaptertest.NewHost())
	req, _ := hostileRequest()
	if _, err := a.SendButtons(t.Context(), adapters.Outbound{Chat: "slack:T1/channel/C1", Text: requestText(req)}, requestButtons(req.ID)); err != nil {
		t.Fatal(err)
	}
	calls := s.Calls("chat.postMessage")
	if len(calls) != 1 {
		t.Fatalf("%d chat.postMessage calls, want 1 (formatted, no plain fallback)", len(calls))
	}
	p := map[string]string{}
	for k := range calls[0].Form {
		p[k] = calls[0].Form.Get(k)
	}
	if p["link_names"] == "true" || p["link_names"] == "1" || p["parse"] == "full" {
		t.Errorf("the request asks Slack to link names: link_names=%q parse=%q", p["link_names"], p["parse"])
	}
	var blocks []struct {
		Type string `json:"type"`
		Text struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
	}
	if err := json.Unmarshal([]byte(p["blocks"]), &blocks); err != nil || len(blocks) == 0 || blocks[0].Text.Type != "mrkdwn" {
		t.Fatalf("blocks %s: %v; want a mrkdwn section first", p["blocks"], err)
	}
	section := blocks[0].Text.Text
	for name, text := range map[string]string{"the section": section, "the fallback text": p["text"]} {
		if strings.ContainsAny(text, "<>") {
			t.Errorf("%s holds < or > (a Slack control sequence or link):\n%s", name, text)
		}
		for _, want := range []string{"&lt;!channel&gt;", "&lt;@123&gt;", "&amp;amp;"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q (escaped):\n%s", name, want, text)
			}
		}
	}
	if !strings.HasPrefix(section, "*Approval needed*") || strings.Count(section, "```") != 2 {
		t.Errorf("the section is not the bold title and one code block:\n%s", section)
	}
	wantShown(t, "Slack", slackShown(section), req)
}

// TestApprovalRequestRendersSafelyDiscord: the request's content keeps its
// arguments inside one code block (their fences defused), the tool name in
// inline code, so that no mention in them pings anyone.
func TestApprovalRequestRendersSafelyDiscord(t *testing.T) {
	f := discordtest.New(t)
	d := discord.New(discord.Options{Token: discordtest.Token, APIURL: f.URL()})
	adaptertest.Start(t, d, adaptertest.NewHost())
	req, _ := hostileRequest()
	chat := adapters.JID("discord:" + discordtest.GuildID + "/" + discordtest.Channel)
	if _, err := d.SendButtons(t.Context(), adapters.Outbound{Chat: chat, Text: requestText(req)}, requestButtons(req.ID)); err != nil {
		t.Fatal(err)
	}
	msgs := f.Messages(discordtest.Channel)
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the channel, want the request", len(msgs))
	}
	m := msgs[0]
	// Discord lets the bot ping the users its text mentions (parse:
	// users), and never @everyone or roles; in code nothing pings, and all
	// that the agent chose is in code.
	var allowed struct {
		Parse []string `json:"parse"`
	}
	if err := json.Unmarshal([]byte(m.AllowedJSON), &allowed); err != nil || slices.Contains(allowed.Parse, "everyone") || slices.Contains(allowed.Parse, "roles") {
		t.Errorf("allowed_mentions %s (%v): the request may ping @everyone or roles", m.AllowedJSON, err)
	}
	outside := byFence(m.Content, func(s string) string { return inlineCode.ReplaceAllString(s, "") }, func(string) string { return "" })
	for _, ping := range []string{"@everyone", "@here", "<@"} {
		if strings.Contains(outside, ping) {
			t.Errorf("%q is outside code in the request: %q", ping, outside)
		}
	}
	lines := strings.Split(m.Content, "\n")
	if lines[0] != "**Approval needed** (request `ab12cd`)" || strings.Count(m.Content, "```") != 2 ||
		!strings.HasPrefix(lines[2], "```") || lines[len(lines)-1] != "```" {
		t.Errorf("the content is not the title, the group line and one code block to the end:\n%s", m.Content)
	}
	if !strings.Contains(lines[1], "`Ba'sh <b>&amp; @everyone`") {
		t.Errorf("the tool name is not one inline code span: %q", lines[1])
	}
	wantShown(t, "Discord", discordShown(m.Content), req)
	if len(m.Buttons) != 3 {
		t.Errorf("buttons %+v, want three", m.Buttons)
	}
}

// wantShown checks that a chat shows the request's text whole: the tool
// name and every argument line, hostile characters as text (fences
// defused to ”').
func wantShown(t *testing.T, platform, shown string, a store.Approval) {
	t.Helper()
	args := strings.ReplaceAll(a.Args, "```", "'''")
	for _, want := range append([]string{"Approval needed (request ab12cd)", "Group main wants to call Ba'sh <b>&amp; @everyone:"},
		strings.Split(args, "\n")...) {
		if !strings.Contains(shown, want) {
			t.Errorf("%s does not show %q; it shows:\n%s", platform, want, shown)
		}
	}
}

// byFence applies outside to the text outside code blocks and inside to
// the code in them, dropping the fences.
func byFence(s string, outside, inside func(string) string) string {
	parts := strings.Split(s, "```")
	for i := range parts {
		if i%2 == 0 {
			parts[i] = outside(parts[i])
		} else {
			parts[i] = inside(parts[i])
		}
	}
	return strings.Join(parts, "")
}

// slackShown is mrkdwn as Slack shows it, for the text this test sends: the
// markup (*bold*, `code`, fences) gone, the entities decoded.
func slackShown(s string) string {
	s = byFence(s, strings.NewReplacer("`", "", "*", "").Replace, func(c string) string { return c })
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// discordShown is Discord Markdown as shown, for the text this test sends.
func discordShown(s string) string {
	return byFence(s, strings.NewReplacer("**", "", "`", "").Replace, func(c string) string { return c })
}

var inlineCode = regexp.MustCompile("`[^`\n]*`")
