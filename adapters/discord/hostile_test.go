package discord

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// A hostile gateway: malformed and mistyped events, events for unknown
// channels and guilds, a 4 MiB message, and attachment URLs that point at
// other services on this host. The adapter stays connected, delivers only
// what it can normalize, never fetches from a service that is not Discord's
// CDN, and the next ordinary message still arrives.
func TestHostileGatewayEvents(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)

	var secretHits atomic.Int64
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		fmt.Fprint(w, "admin secrets")
	}))
	defer secret.Close()

	huge := strings.Repeat("x", 4<<20)
	for _, ev := range []struct{ t, d string }{
		{"MESSAGE_CREATE", `{"id": 1`}, // truncated
		{"MESSAGE_CREATE", `null`},     // no object
		{"MESSAGE_CREATE", `{"id":"900","channel_id":"` + discordtest.Channel + `","content":123}`}, // wrong type
		{"MESSAGE_CREATE", `{"id":"901","channel_id":"` + discordtest.Channel + `","content":"no author"}`},
		{"MESSAGE_CREATE", `{"id":"","channel_id":"","content":"no ids","author":{"id":"1"}}`},
		{"MESSAGE_CREATE", `{"id":"902","channel_id":"999","guild_id":"888","content":"unknown guild","author":{"id":"1"}}`},
		{"MESSAGE_UPDATE", `{"id":"903"}`},
		{"MESSAGE_DELETE", `{}`},
		{"MESSAGE_REACTION_ADD", `{"emoji":null}`},
		{"THREAD_CREATE", `{"id":"904","parent_id":null}`},
		{"GUILD_CREATE", `{"id":"` + discordtest.GuildID + `","channels":"nope"}`},
		{"NO_SUCH_EVENT", `{"a":[1,2,3]}`},
		{"MESSAGE_CREATE", `{"id":"905","channel_id":"` + discordtest.Channel + `","guild_id":"` + discordtest.GuildID +
			`","content":"` + huge + `","author":{"id":"77","username":"mallory"},"timestamp":"2026-11-25T10:00:00Z"}`},
	} {
		f.DispatchRaw(ev.t, ev.d)
	}
	// Attachments whose URLs point at this host's other services.
	secretURL, _ := url.Parse(secret.URL)
	for _, u := range []string{secret.URL + "/metrics", "http://" + secretURL.Host + "/", "https://cdn.discordapp.com.evil.test/x",
		"file:///etc/passwd", "http://169.254.169.254/latest/meta-data/"} {
		f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "see " + u, File: "a.txt", FileData: []byte("x"), FileURL: u})
	}
	last := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "still here"})

	host.Wait(t, 20*time.Second, "the ordinary message after the hostile ones", func(h *adaptertest.Host) bool {
		for _, e := range h.Events() {
			if e.ID.String() == last {
				return true
			}
		}
		return false
	})
	if !f.Connected() {
		t.Error("the adapter dropped its gateway connection")
	}
	for _, e := range host.Events() {
		if e.ID == "905" && len(e.Text) > 0 {
			t.Logf("the 4 MiB message reached the host as %d bytes (the gateway refuses a text over 1 MiB as garbage)", len(e.Text))
		}
		if e.ID == "900" || e.ID == "901" || e.ID == "" || e.ID == "903" {
			t.Errorf("a malformed event was delivered: %+v", e)
		}
		for _, att := range e.Attachments {
			if _, err := a.Download(t.Context(), att); err == nil {
				t.Errorf("the attachment of %q was fetched", e.Text)
			} else if !strings.Contains(err.Error(), "not on Discord's CDN") {
				t.Errorf("the attachment of %q: %v; want a refusal naming the CDN", e.Text, err)
			}
		}
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the service on this host was fetched %d times", n)
	}
}
