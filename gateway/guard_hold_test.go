package gateway

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A held chat is deferred, told once under the given key (or a new one),
// and its folder woken when the wait is over; a chat that cannot be
// deferred is not told.
func TestChatHolder(t *testing.T) {
	var h heldChats
	b := messageBatch("main", "test:room/1", "test:user/ann")
	until := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	if err := h.holder().hold(context.Background(), b, until, time.Minute, "wait", "k1"); err != nil {
		t.Fatal(err)
	}
	if err := h.holder().hold(context.Background(), b, until, time.Minute, "", ""); err != nil {
		t.Fatal(err)
	}
	if got := h.deferTo["main/test:room/1/"]; !got.Equal(until) {
		t.Errorf("deferred to %v", got)
	}
	if len(h.sent) != 1 || h.sent[0].Key != "k1" || h.sent[0].Text != "wait" || h.sent[0].Chat != b.ChatJID {
		t.Errorf("notices %+v", h.sent)
	}
	if len(h.kicks) != 2 {
		t.Errorf("kicks %v", h.kicks)
	}
	h.err = errors.New("disk full")
	if err := h.holder().hold(context.Background(), b, until, time.Minute, "again", ""); err == nil || len(h.sent) != 1 {
		t.Errorf("err %v, notices %d", err, len(h.sent))
	}
}
