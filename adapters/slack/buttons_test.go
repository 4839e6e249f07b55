package slack_test

import (
	"net/http"
	"testing"
	"time"

	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

// TestInteractivityVerified: a press over the Events API's interactivity
// URL is signed like an event; a bad or stale signature is refused 401 and
// reaches nobody, a good one reaches Host.Press and its answer is posted
// to the presser alone.
func TestInteractivityVerified(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	a := start(t, s, slack.ModeEvents, host)
	s.InteractivityURL = "http://" + a.Addr().String() + slack.InteractivityPath
	ts := s.AddMessage("C1", slacktest.BotUser, "Run rm?", "")
	payload := s.PressPayload("C1", ts, "U1", "appr:1:allow")
	for _, tc := range []struct {
		name   string
		secret string
		at     time.Time
	}{
		{"wrong secret", "not-the-secret", time.Now()},
		{"stale", slacktest.Secret, time.Now().Add(-10 * time.Minute)},
	} {
		if status, err := s.PostInteraction(payload, tc.secret, tc.at); err != nil || status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, %v; want 401", tc.name, status, err)
		}
	}
	if n := len(host.Presses()); n != 0 || len(s.Ephemerals()) != 0 {
		t.Fatalf("refused requests reached Host.Press %d times and answered %+v", n, s.Ephemerals())
	}
	if status, err := s.PostInteraction(payload, slacktest.Secret, time.Now()); err != nil || status != http.StatusOK {
		t.Fatalf("signed press: status %d, %v; want 200", status, err)
	}
	if p := host.Presses(); len(p) != 1 || p[0].Data != "appr:1:allow" || p[0].Sender != "slack:T1/user/U1" || p[0].Chat != "slack:T1/channel/C1" {
		t.Errorf("presses %+v; want appr:1:allow by slack:T1/user/U1 in slack:T1/channel/C1", p)
	}
	if e := s.Ephemerals(); len(e) != 1 || e[0].User != "U1" || e[0].Channel != "C1" || e[0].Text != "pressed appr:1:allow" {
		t.Errorf("ephemerals %+v; want the answer to U1 in C1", e)
	}
}
