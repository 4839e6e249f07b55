package main

import (
	"testing"
	"time"
)

// TestE2EEngagementSurvivesRestart: after the bot spoke in a chat routed
// for observation only, follow-ups there trigger for engage_ttl (CONTRACT
// §5). A gateway restarted meanwhile (a crash, or a deploy) still answers
// the follow-up: the engagement was in memory only, and the user who was
// talking to the bot got silence.
func TestE2EEngagementSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: replyAgent, routes: "  - {match: {platform: web, room: watch}, target: main, mode: observe}\n"})
	g := startGW(t, dir)
	g.mustCLI("inject", "web:watch", "answer now")
	g.waitBot("watch", 1)
	g.kill()

	g = startGW(t, dir)
	g.mustPost("watch", "ann", "follow-up without mention")
	if got := g.waitBot("watch", 2); got[1].Text != "reply 2 from main" {
		t.Errorf("the follow-up was answered %q", got[1].Text)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}
