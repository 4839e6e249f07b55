package telegram

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// TestUpdatesDeliveredInOrder: updates that arrive in one getUpdates
// answer are delivered one at a time, in update order (go-telegram/bot
// runs each handler in a goroutine of its own unless told not to): a
// chat's messages keep the order they were written in, and an edit comes
// after the message it edits, never before it (where it would find no
// message and be lost).
func TestUpdatesDeliveredInOrder(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	const n = 40
	var first int
	var want []string
	for i := range n {
		m, id := f.UserMessage(telegramtest.UserID, fmt.Sprint("m", i), false, 0, 0)
		if i == 0 {
			first = id
		}
		f.Push("message", m)
		want = append(want, fmt.Sprint("m", i))
	}
	e, _ := f.UserMessage(telegramtest.UserID, "m0 edited", false, 0, 0)
	e["message_id"], e["edit_date"] = first, time.Now().Unix()
	f.Push("edited_message", e)
	want = append(want, "edit:m0 edited")
	adaptertest.Start(t, newAdapter(f, nil), host)
	evs := host.WaitEvents(t, n+1)
	var got []string
	for _, ev := range evs {
		if ev.Kind == adapters.KindEdit {
			got = append(got, "edit:"+ev.Text)
		} else {
			got = append(got, ev.Text)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("delivered in the order\n%v\nwant the updates' order\n%v", got, want)
	}
}
