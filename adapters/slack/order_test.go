package slack_test

import (
	"fmt"
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

// TestSocketEventsDeliveredInOrder: Socket Mode events are handled one at a
// time, in the order Slack sent them: a channel's messages keep the order
// they were written in, and an edit comes after its message.
func TestSocketEventsDeliveredInOrder(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	s.WaitFor(t, "the connection", func() bool { return s.Connections() == 1 })
	const n = 40
	var want []string
	var first string
	for i := range n {
		ts := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: fmt.Sprint("m", i)})
		if i == 0 {
			first = ts
		}
		want = append(want, fmt.Sprint("m", i))
	}
	if err := s.UserEdits("C1", first, "m0 edited"); err != nil {
		t.Fatal(err)
	}
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
