package discord

import (
	"strings"
	"testing"
	"time"

	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// Bots and webhooks (CI, monitoring, GitHub) post their news as rich
// embeds with empty content. Such a message is stored as other bots' are,
// with the embed's text (author, title, description, fields, footer), so
// that a folder observing the channel reads what it said rather than an
// empty message. A link preview (an embed Discord makes from a URL a
// person posted) adds nothing: the URL is in the text already.
func TestRichEmbedsAreText(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	f.DispatchRaw("MESSAGE_CREATE", `{"id":"9101","type":0,"channel_id":"`+discordtest.Channel+`","guild_id":"`+discordtest.GuildID+
		`","content":"","webhook_id":"44","author":{"id":"44","username":"CI","bot":true},"timestamp":"2026-11-25T10:00:00Z",`+
		`"embeds":[{"type":"rich","title":"Build #812 failed","description":"main: 3 tests failed","author":{"name":"ci-bot"},`+
		`"fields":[{"name":"Branch","value":"main"},{"name":"Commit","value":"a1b2c3"}],"footer":{"text":"took 4m"}}]}`)
	f.DispatchRaw("MESSAGE_CREATE", `{"id":"9102","type":0,"channel_id":"`+discordtest.Channel+`","guild_id":"`+discordtest.GuildID+
		`","content":"see https://example.com/a","author":{"id":"`+discordtest.UserID+`","username":"ann"},"timestamp":"2026-11-25T10:00:01Z",`+
		`"embeds":[{"type":"link","title":"Example Domain","description":"This domain is for use in examples","url":"https://example.com/a"}]}`)
	host.Wait(t, 20*time.Second, "both messages", func(h *adaptertest.Host) bool { return len(h.Events()) >= 2 })
	for _, e := range host.Events() {
		switch e.ID {
		case "9101":
			for _, want := range []string{"ci-bot", "Build #812 failed", "main: 3 tests failed", "Branch: main", "Commit: a1b2c3", "took 4m"} {
				if !strings.Contains(e.Text, want) {
					t.Errorf("the webhook's embed reads %q; want it to hold %q", e.Text, want)
				}
			}
			if !e.OtherBot {
				t.Errorf("the webhook's message is not marked as another bot's: %+v", e)
			}
		case "9102":
			if e.Text != "see https://example.com/a" {
				t.Errorf("a person's link with its preview reads %q; want the text alone", e.Text)
			}
		}
	}
}

// A poll a person posts (empty content, the question and answers in its
// poll object) reaches the agent as text, as Telegram's polls do, not as
// an empty message.
func TestPollIsText(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	f.DispatchRaw("MESSAGE_CREATE", `{"id":"9201","type":0,"channel_id":"`+discordtest.Channel+`","guild_id":"`+discordtest.GuildID+
		`","content":"","author":{"id":"`+discordtest.UserID+`","username":"ann"},"timestamp":"2026-11-25T10:00:00Z",`+
		`"poll":{"question":{"text":"Lunch?"},"answers":[{"answer_id":1,"poll_media":{"text":"Pizza"}},{"answer_id":2,"poll_media":{"text":"Sushi"}}],"allow_multiselect":false}}`)
	ev := host.WaitEvents(t, 1)[0]
	if want := "[poll Lunch? — Pizza / Sushi]"; ev.Text != want {
		t.Errorf("a poll reads %q; want %q", ev.Text, want)
	}
}
