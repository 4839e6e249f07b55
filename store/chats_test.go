package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

func TestChats(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	clock := time.UnixMilli(5_000)
	s.now = func() time.Time { return clock }

	m := &Message{ChatJID: "telegram:group/1", ID: "1"}
	mustInsert(t, s, m)
	clock = time.UnixMilli(9_000)
	if err := s.UpsertChat(ctx, Chat{JID: "telegram:group/1", Name: "Ops"}); err != nil {
		t.Fatal(err)
	}
	m2 := &Message{ChatJID: "telegram:group/1", ID: "2"}
	mustInsert(t, s, m2)
	if err := s.UpsertChat(ctx, Chat{JID: "telegram:group/1"}); err != nil { // empty name keeps "Ops"
		t.Fatal(err)
	}
	if err := s.UpsertChat(ctx, Chat{JID: "discord:dm/77", Platform: "discord", Name: "DM", FirstSeen: time.UnixMilli(1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertChat(ctx, Chat{JID: "discord:dm/77", Name: "Renamed", LastSeq: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Chats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chat{
		{JID: "discord:dm/77", Platform: "discord", Name: "Renamed", FirstSeen: time.UnixMilli(1), LastSeq: 3},
		{JID: "telegram:group/1", Platform: "telegram", Name: "Ops", FirstSeen: time.UnixMilli(5_000), LastSeq: m2.Seq},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Chats = %+v\nwant   %+v", got, want)
	}
	if err := s.UpsertChat(ctx, Chat{}); err == nil {
		t.Error("UpsertChat with an empty JID succeeded")
	}
}
