package discord

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// The CDN allow-list holds for redirects too: an attachment on the CDN
// that redirects to another service of this host is refused, permanently,
// and that service is never asked.
func TestDownloadRedirectOffCDNRefused(t *testing.T) {
	var hits atomic.Int64
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "admin secrets")
	}))
	defer secret.Close()
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)
	id := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "see", File: "a.txt", FileData: []byte("x")})
	f.RedirectCDN(id, secret.URL+"/metrics")
	ev := host.WaitEvents(t, 1)[0]
	_, err := a.Download(t.Context(), ev.Attachments[0])
	if !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), "not on Discord's CDN") {
		t.Errorf("redirected off the CDN: %v; want a permanent refusal naming the CDN", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the service the CDN redirected to was asked %d times", n)
	}
}
