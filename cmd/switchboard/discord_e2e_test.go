package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters/discord/discordtest"
	"switchboard/internal/testmcp"
)

// A mention in a Discord channel reaches the agent through the real binary
// and its reply appears in the channel; one in a thread is answered in the
// thread (the channel's route covers its threads).
func TestE2EDiscord(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  discord: {enabled: true, token: \"" + discordtest.Token + "\", api_url: \"" + dc.URL() + "\"}\n",
		routes:   "  - {match: {chat_jid: \"discord:" + discordtest.GuildID + "/" + discordtest.Channel + "\"}, target: main}\n"})
	g := startGW(t, dir)
	dc.WaitFor(t, "the bot connected", dc.Connected)
	id := dc.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "status?", MentionBot: true})
	reply := dc.WaitBotMessage(t, discordtest.Channel, "the agent's reply", func(discordtest.Msg) bool { return true })
	if reply.Content != "reply 1 from main" || reply.ReplyTo != id {
		t.Errorf("reply %+v; want \"reply 1 from main\" replying to %s", reply, id)
	}
	dc.UserPosts(discordtest.Post{Channel: discordtest.Thread, Content: "and here?", MentionBot: true})
	dc.WaitBotMessage(t, discordtest.Thread, "the reply in the thread", func(m discordtest.Msg) bool { return m.Content == "reply 2 from main" })
	if p := turnFile(t, dir, "main", "prompt", 2); !strings.Contains(p, `topic="`+discordtest.Thread+`"`) {
		t.Errorf("the thread's prompt lacks its topic:\n%s", p)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// A bot whose application lacks the Message Content intent is refused by
// Discord's gateway (close 4014). `switchboard run` stops at start with an
// error naming the portal toggle and the config key, rather than
// reconnecting forever with every message arriving empty.
func TestE2EDiscordWithoutMessageContentIntent(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	dc.DisallowMessageContent()
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  discord: {enabled: true, token: \"" + discordtest.Token + "\", api_url: \"" + dc.URL() + "\"}\n"})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, switchboardBinary(t), "--config", "switchboard.yaml", "run")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("switchboard run: %v (context: %v); want exit status 1 at start\n%s", err, ctx.Err(), stderr.String())
	}
	last := strings.TrimSpace(stderr.String())
	last = last[strings.LastIndex(last, "\n")+1:]
	for _, want := range []string{"switchboard: ", "adapters.discord", "Privileged Gateway Intents", "Message Content Intent"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last line of stderr %q does not mention %q", last, want)
		}
	}
}

// A Discord chat JID names one channel, and a topic one thread under it:
// a group that owns discord:<guild>/<channel> (or every DM) must not reach
// another channel — of another server, a DM, or a sibling channel another
// group may own — through the topic, another guild or "dm/" in the JID.
// The adapter addressed the channel id alone, so ownership of one chat
// was ownership of every channel the bot could post in.
func TestE2EDiscordChatJIDNamesOnlyItsChannel(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	chat := "discord:" + discordtest.GuildID + "/" + discordtest.Channel
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  discord: {enabled: true, token: \"" + discordtest.Token + "\", api_url: \"" + dc.URL() + "\"}\n",
		routes: "  - {match: {chat_jid: \"discord:" + discordtest.GuildID + "/*\"}, target: main}\n" +
			"  - {match: {platform: discord, room: \"dm/*\"}, target: main}\n"})
	g := startGW(t, dir)
	dc.WaitFor(t, "the bot connected", dc.Connected)
	c, err := testmcp.Connect(filepath.Join(dir, "data", "ipc", "main", "mcp.sock"), testmcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const sibling = "201" // a text channel of the same server, not a thread
	for _, args := range []map[string]any{
		{"chat_jid": chat, "topic": discordtest.OtherChannel, "text": "via topic: other server"},
		{"chat_jid": chat, "topic": discordtest.DMChan, "text": "via topic: a DM"},
		{"chat_jid": chat, "topic": sibling, "text": "via topic: a sibling channel"},
		{"chat_jid": "discord:" + discordtest.GuildID + "/" + discordtest.OtherChannel, "text": "via the wrong guild"},
		{"chat_jid": "discord:dm/" + discordtest.OtherChannel, "text": "via dm/"},
		{"chat_jid": "discord:dm/" + discordtest.Channel, "text": "via dm/ to a server channel"},
	} {
		r, err := c.CallTool("send", args)
		if err != nil {
			t.Fatal(err)
		}
		if !r.IsError || !strings.Contains(r.Text(), "discord:") {
			t.Errorf("send %v: %s; want an error naming the chat", args, r.Text())
		}
	}
	// What the group owns still works: the channel, its thread, a DM.
	for _, args := range []map[string]any{
		{"chat_jid": chat, "text": "in the channel"},
		{"chat_jid": chat, "topic": discordtest.Thread, "text": "in the thread"},
		{"chat_jid": "discord:dm/" + discordtest.DMChan, "text": "in the DM"},
	} {
		if r, err := c.CallTool("send", args); err != nil || r.IsError {
			t.Errorf("send %v: %+v %v", args, r, err)
		}
	}
	for _, ch := range []string{discordtest.OtherChannel, sibling} {
		if shown := dc.Shown(ch); len(shown) != 0 {
			t.Errorf("channel %s shows the bot's %+v", ch, shown)
		}
	}
	for _, s := range dc.Shown(discordtest.DMChan, discordtest.Channel) {
		if strings.HasPrefix(s.Content, "via ") {
			t.Errorf("channel %s shows %q", s.Channel, s.Content)
		}
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}
