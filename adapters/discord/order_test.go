package discord

import (
	"fmt"
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// TestEventsDeliveredInOrder: gateway events are handled one at a time, in
// the order Discord sent them (discordgo runs each handler in a goroutine
// of its own unless SyncEvents is set): a channel's messages keep the
// order they were written in, and an edit comes after its message.
func TestEventsDeliveredInOrder(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	const n = 40
	var want []string
	var first string
	for i := range n {
		id := f.UserPosts(discordtest.Post{Channel: discordtest.DMChan, Content: fmt.Sprint("m", i)})
		if i == 0 {
			first = id
		}
		want = append(want, fmt.Sprint("m", i))
	}
	f.UserEdits(discordtest.DMChan, first, "m0 edited")
	want = append(want, "edit:m0 edited")
	var got []string
	for _, ev := range host.WaitEvents(t, n+1) {
		if ev.Kind == adapters.KindEdit {
			got = append(got, "edit:"+ev.Text)
		} else {
			got = append(got, ev.Text)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("delivered in the order\n%v\nwant the events' order\n%v", got, want)
	}
}
