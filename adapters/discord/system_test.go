package discord

import (
	"strconv"
	"testing"
	"time"

	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// Discord's system messages (a member joined, a message was pinned, a
// thread was started, a server boost) arrive as MESSAGE_CREATE with the
// acting user as author and empty or canned content. They are no one
// talking: they are not delivered (as Telegram's service messages are not),
// so a route that triggers on the channel does not run a turn on "Ann
// joined the server". Replies and ordinary messages still arrive.
func TestSystemMessagesAreNotDelivered(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	sys := func(id string, typ int, content string) string {
		return `{"id":"` + id + `","type":` + strconv.Itoa(typ) + `,"channel_id":"` + discordtest.Channel + `","guild_id":"` + discordtest.GuildID +
			`","content":"` + content + `","author":{"id":"` + discordtest.UserID + `","username":"ann"},"timestamp":"2026-11-25T10:00:00Z"}`
	}
	for _, m := range []struct {
		id      string
		typ     int
		content string
	}{
		{"9001", 7, ""},              // a member joined
		{"9002", 6, ""},              // a message was pinned
		{"9003", 18, "release plan"}, // a thread was started
		{"9004", 8, ""},              // a server boost
		{"9005", 21, ""},             // a thread's starter message
	} {
		f.DispatchRaw("MESSAGE_CREATE", sys(m.id, m.typ, m.content))
	}
	f.DispatchRaw("MESSAGE_CREATE", sys("9006", 19, "a reply"))
	last := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "hello"})
	host.Wait(t, 20*time.Second, "the ordinary message after the system ones", func(h *adaptertest.Host) bool {
		for _, e := range h.Events() {
			if e.ID.String() == last {
				return true
			}
		}
		return false
	})
	seen := map[string]bool{}
	for _, e := range host.Events() {
		seen[e.ID.String()] = true
		switch e.ID {
		case "9001", "9002", "9003", "9004", "9005":
			t.Errorf("a system message was delivered as a message: %+v", e)
		}
	}
	if !seen["9006"] {
		t.Error("a reply (type 19) was not delivered")
	}
}
