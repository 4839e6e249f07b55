package slack_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

// The bot token goes only to Slack's hosts (or the configured API's): a
// file whose URL is elsewhere is refused, permanently, and that host never
// sees a request, let alone the token.
func TestDownloadOffSlackRefused(t *testing.T) {
	var hits, tokens atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), slacktest.BotToken) {
			tokens.Add(1)
		}
	}))
	defer elsewhere.Close()
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	a := start(t, s, slack.ModeSocket, host)
	for i, u := range []string{elsewhere.URL + "/files/F1", "https://files.slack.com.evil.test/F1", "http://files.slack.com/F1"} {
		post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "file", File: &slacktest.File{Name: "a.txt", Data: []byte("x"), URL: u}})
		ev := host.WaitEvents(t, i+1)[i]
		_, err := a.Download(t.Context(), ev.Attachments[0])
		if !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), "not on Slack") {
			t.Errorf("%s: %v; want a permanent refusal saying it is not on Slack", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the host off Slack was asked %d times (%d with the token)", n, tokens.Load())
	}
}

// The Slack-only rule holds for redirects too: a file on Slack whose
// download redirects elsewhere is refused, permanently, and that host is
// never asked (the Authorization header would go with the request to
// another port of the same host).
func TestDownloadRedirectOffSlackRefused(t *testing.T) {
	var hits, tokens atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), slacktest.BotToken) {
			tokens.Add(1)
		}
	}))
	defer elsewhere.Close()
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	a := start(t, s, slack.ModeSocket, host)
	post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "file", File: &slacktest.File{Name: "a.txt", Data: []byte("x"),
		Redirect: elsewhere.URL + "/steal"}})
	ev := host.WaitEvents(t, 1)[0]
	_, err := a.Download(t.Context(), ev.Attachments[0])
	if !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), "not on Slack") {
		t.Errorf("redirected off Slack: %v; want a permanent refusal saying it is not on Slack", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the host the download redirected to was asked %d times (%d with the token)", n, tokens.Load())
	}
}
