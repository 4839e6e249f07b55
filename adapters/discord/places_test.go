package discord

import (
	"fmt"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// placesKnown is how many threads and channels the adapter remembers.
func placesKnown(a *Adapter) (threads, channels int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.parents), len(a.homes)
}

// TestPlacesBounded: a bot that runs for months sees ever new threads and
// DM channels; what it remembers of them must not grow with every one it
// ever saw. The thread it learned last still resolves to its parent
// channel without asking Discord.
func TestPlacesBounded(t *testing.T) {
	a := New(Options{Token: discordtest.Token})
	const n = 3 * maxPlaces
	for i := range n {
		a.learnChannel(&discordgo.Channel{ID: fmt.Sprintf("t%d", i), GuildID: "g", ParentID: "c", Type: discordgo.ChannelTypeGuildPublicThread})
		a.place(t.Context(), "", fmt.Sprintf("dm%d", i))
	}
	threads, channels := placesKnown(a)
	if threads > maxPlaces || channels > maxPlaces {
		t.Errorf("after %d threads and %d DMs the adapter remembers %d threads and %d channels; want at most %d each", n, n, threads, channels, maxPlaces)
	}
	chat, topic := a.place(t.Context(), "g", fmt.Sprintf("t%d", n-1))
	if chat != adapters.JID("discord:g/c") || topic != fmt.Sprintf("t%d", n-1) {
		t.Errorf("the last thread placed as %s topic %q; want discord:g/c topic t%d", chat, topic, n-1)
	}
}

// TestDeletedThreadsForgotten: threads created and deleted on the gateway
// leave nothing behind in the adapter.
func TestDeletedThreadsForgotten(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)
	f.WaitFor(t, "connected", f.Connected)
	before, _ := placesKnown(a)
	const n = 200
	for i := range n {
		d := fmt.Sprintf(`{"id":"%d","guild_id":"%s","parent_id":"%s","type":11}`, 70000+i, discordtest.GuildID, discordtest.Channel)
		f.DispatchRaw("THREAD_CREATE", d)
		f.DispatchRaw("THREAD_DELETE", d)
	}
	// An ordinary message after them: the events before it were handled.
	last := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "after the threads"})
	host.Wait(t, 20*time.Second, "the message after the threads", func(h *adaptertest.Host) bool {
		for _, e := range h.Events() {
			if e.ID.String() == last {
				return true
			}
		}
		return false
	})
	if after, _ := placesKnown(a); after > before+n/10 {
		t.Errorf("threads remembered: %d before %d created and deleted, %d after", before, n, after)
	}
}
