package discord

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// percent spells s as percent escapes only: "200" is "%32%30%30".
func percent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// TestOtherSpellingsOfAnIDReachNothing: the gateway authorizes a call by
// its chat JID and topic (the owner of discord:100/200 may be one group,
// a catch-all route for discord another), while Discord reads ids from a
// REST path it decodes first. discord:100/%32%30%30 or the topic
// %33%30%30 must not post into channel 200 or thread 300, which the route
// table never saw named, nor must discord:100/0200 (Discord reads "0200"
// as the snowflake 200); each is refused for good, saying which id.
func TestOtherSpellingsOfAnIDReachNothing(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	f.WaitFor(t, "connected", f.Connected)
	posted := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "a member's message"})
	g := discordtest.GuildID
	for _, out := range []adapters.Outbound{
		{Chat: adapters.JID("discord:" + g + "/" + percent(discordtest.Channel))},
		{Chat: adapters.JID("discord:" + percent(g) + "/" + discordtest.Channel)},
		{Chat: adapters.JID("discord:dm/" + percent(discordtest.DMChan))},
		{Chat: channelChat, Topic: percent(discordtest.Thread)},
		{Chat: adapters.JID("discord:" + g + "/x/../" + discordtest.Channel)},
		{Chat: channelChat, Topic: "x/../" + discordtest.Thread},
		{Chat: adapters.JID("discord:" + g + "/0" + discordtest.Channel)},
		{Chat: channelChat, Topic: "0" + discordtest.Thread},
	} {
		out.Text = "sent to " + string(out.Chat) + " topic " + out.Topic
		_, err := a.Send(t.Context(), out)
		if !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), "letters, digits") {
			t.Errorf("send to %s topic %q: %v; want a permanent error saying what an id is", out.Chat, out.Topic, err)
		}
	}
	ref := adapters.MessageRef{Chat: channelChat, ID: adapters.MessageID(percent(posted))}
	if err := a.Edit(t.Context(), ref, "edited"); !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("edit of message %s: %v; want a permanent error", ref.ID, err)
	}
	for _, ch := range []string{discordtest.Channel, discordtest.Thread, discordtest.DMChan} {
		for _, m := range f.Messages(ch) {
			if m.AuthorID == discordtest.BotID {
				t.Errorf("channel %s got the bot's %q", ch, m.Content)
			}
		}
	}
	// The ids as Discord writes them still work.
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: channelChat, Topic: discordtest.Thread, Text: "in the thread"}); err != nil {
		t.Errorf("send into the thread: %v", err)
	}
}
