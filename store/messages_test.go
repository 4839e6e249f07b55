package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"switchboard/adapters"
)

func mustInsert(t testing.TB, s *Store, ms ...*Message) {
	t.Helper()
	for _, m := range ms {
		if _, err := s.InsertMessage(context.Background(), m); err != nil {
			t.Fatalf("InsertMessage %s/%s: %v", m.ChatJID, m.ID, err)
		}
	}
}

func seqsOf(ms []Message) []int64 {
	out := []int64{}
	for _, m := range ms {
		out = append(out, m.Seq)
	}
	return out
}

func TestInsertMessageRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	in := Message{
		ChatJID: "telegram:group/100", ID: "42", Sender: "telegram:user/7", SenderName: "Ann",
		Text: "hello there", Topic: "5", ReplyTo: "41", Verb: "mention", FromBot: true,
		Time: time.UnixMilli(1_790_000_000_123),
		Attachments: []adapters.Attachment{
			{Name: "a.png", MIME: "image/png", Ref: "file-a", Size: 1234},
			{Name: "b.txt"},
		},
	}
	m := in
	inserted, err := s.InsertMessage(ctx, &m)
	if err != nil || !inserted || m.Seq <= 0 {
		t.Fatalf("InsertMessage = %v, %v, seq %d", inserted, err, m.Seq)
	}
	want := in
	want.Seq = m.Seq
	for name, get := range map[string]func() (Message, error){
		"Message":     func() (Message, error) { return s.Message(ctx, m.Seq) },
		"MessageByID": func() (Message, error) { return s.MessageByID(ctx, in.ChatJID, in.ID) },
	} {
		got, err := get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %+v\nwant %+v", name, got, want)
		}
	}
}

func TestInsertMessageDefaults(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	fixed := time.UnixMilli(1_800_000_000_000)
	s.now = func() time.Time { return fixed }
	m := &Message{ChatJID: "web:lobby", ID: "x"}
	mustInsert(t, s, m)
	if !m.Time.Equal(fixed) {
		t.Errorf("zero Time became %v, want now %v", m.Time, fixed)
	}
	got, _ := s.Message(ctx, m.Seq)
	if got.Attachments != nil || !got.Time.Equal(fixed) {
		t.Errorf("stored = %+v", got)
	}
}

func TestMessageIdentity(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	// Telegram ids are per-chat counters: the same id in two chats is two messages.
	a := &Message{ChatJID: "telegram:group/1", ID: "7", Text: "in group one"}
	b := &Message{ChatJID: "telegram:group/2", ID: "7", Text: "in group two"}
	mustInsert(t, s, a, b)
	if a.Seq == b.Seq {
		t.Fatalf("both messages got seq %d", a.Seq)
	}
	for _, m := range []*Message{a, b} {
		got, err := s.MessageByID(ctx, m.ChatJID, "7")
		if err != nil || got.Text != m.Text || got.Seq != m.Seq {
			t.Errorf("MessageByID(%s, 7) = %+v, %v", m.ChatJID, got, err)
		}
	}

	dup := &Message{ChatJID: "telegram:group/1", ID: "7", Text: "redelivered, edited"}
	inserted, err := s.InsertMessage(ctx, dup)
	if err != nil || inserted {
		t.Fatalf("duplicate InsertMessage = %v, %v; want false, nil", inserted, err)
	}
	if dup.Seq != a.Seq {
		t.Errorf("duplicate got seq %d, want the original %d", dup.Seq, a.Seq)
	}
	got, _ := s.Message(ctx, a.Seq)
	if got.Text != "in group one" {
		t.Errorf("duplicate changed the stored row: %q", got.Text)
	}
	if last, _ := s.LastSeq(ctx); last != b.Seq {
		t.Errorf("LastSeq = %d, want %d (duplicate must not take a seq)", last, b.Seq)
	}
	all, _ := s.MessagesAfter(ctx, "telegram:group/1", 0, 0)
	if len(all) != 1 {
		t.Errorf("group one holds %d messages, want 1", len(all))
	}
}

func TestInsertMessageRejectsIncompleteIdentity(t *testing.T) {
	s := newStore(t)
	tests := []struct {
		name string
		m    *Message
	}{
		{"nil", nil},
		{"no chat", &Message{ID: "1"}},
		{"no id", &Message{ChatJID: "web:lobby"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.InsertMessage(context.Background(), tc.m); !errors.Is(err, ErrInvalidMessage) {
				t.Errorf("InsertMessage = %v, want ErrInvalidMessage", err)
			}
		})
	}
}

func TestSeqStrictlyIncreasing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var last int64
	for i := range 50 {
		m := &Message{ChatJID: adapters.JID(fmt.Sprintf("web:room%d", i%3)), ID: adapters.MessageID(fmt.Sprint(i))}
		mustInsert(t, s, m)
		if m.Seq <= last {
			t.Fatalf("message %d got seq %d after %d", i, m.Seq, last)
		}
		last = m.Seq
	}
	if got, _ := s.LastSeq(ctx); got != last {
		t.Errorf("LastSeq = %d, want %d", got, last)
	}
}

func TestInsertMessagesBatch(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	pre := &Message{ChatJID: "web:a", ID: "1", Text: "already here"}
	mustInsert(t, s, pre)
	batch := []*Message{
		{ChatJID: "web:a", ID: "1", Text: "dup of stored"},
		{ChatJID: "web:a", ID: "2"},
		{ChatJID: "web:b", ID: "2"},
		{ChatJID: "web:a", ID: "2", Text: "dup within batch"},
	}
	n, err := s.InsertMessages(ctx, batch)
	if err != nil || n != 2 {
		t.Fatalf("InsertMessages = %d, %v; want 2", n, err)
	}
	if batch[0].Seq != pre.Seq || batch[3].Seq != batch[1].Seq {
		t.Errorf("duplicates got seqs %d, %d; want %d, %d", batch[0].Seq, batch[3].Seq, pre.Seq, batch[1].Seq)
	}
	if !(pre.Seq < batch[1].Seq && batch[1].Seq < batch[2].Seq) {
		t.Errorf("seqs not increasing: %d %d %d", pre.Seq, batch[1].Seq, batch[2].Seq)
	}
}

func TestInsertMessagesRollsBackWholeBatch(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	// A temp trigger on the writer connection makes the third insert fail
	// inside the transaction, after two rows went in.
	err := s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TEMP TRIGGER fail_boom BEFORE INSERT ON main.messages
			WHEN new.text = 'boom' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	batch := []*Message{
		{ChatJID: "web:a", ID: "1", Text: "one"},
		{ChatJID: "web:new", ID: "2", Text: "two"},
		{ChatJID: "web:a", ID: "3", Text: "boom"},
	}
	n, err := s.InsertMessages(ctx, batch)
	if err == nil || n != 0 {
		t.Fatalf("InsertMessages = %d, %v; want an error", n, err)
	}
	for i, m := range batch {
		if m.Seq != 0 || !m.Time.IsZero() {
			t.Errorf("message %d was changed by a failed batch: seq %d time %v", i, m.Seq, m.Time)
		}
	}
	if last, _ := s.LastSeq(ctx); last != 0 {
		t.Errorf("LastSeq = %d after a failed batch, want 0", last)
	}
	if cs, _ := s.Chats(ctx); len(cs) != 0 {
		t.Errorf("chats after a failed batch: %+v", cs)
	}
	if hits, _ := s.Search(ctx, "one OR two", SearchOptions{}); len(hits) != 0 {
		t.Errorf("search index kept rows of a failed batch: %+v", hits)
	}
}

func TestMessageNotFound(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	mustInsert(t, s, &Message{ChatJID: "web:a", ID: "1"})
	if _, err := s.Message(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("Message(999) = %v, want ErrNotFound", err)
	}
	if _, err := s.MessageByID(ctx, "web:b", "1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MessageByID in another chat = %v, want ErrNotFound", err)
	}
}

func TestMessageListing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	// Interleave two chats. In chat a, odd messages are in topic "a1" (whose
	// root, message a1, is itself in the topic); chat b uses the same topic
	// name and must not leak into chat a's thread.
	var a []int64
	for i := range 10 {
		topic := ""
		if i%2 == 1 {
			topic = "a1"
		}
		ma := &Message{ChatJID: "web:a", ID: adapters.MessageID(fmt.Sprintf("a%d", i)), Topic: topic}
		mb := &Message{ChatJID: "web:b", ID: adapters.MessageID(fmt.Sprintf("b%d", i)), Topic: "a1"}
		mustInsert(t, s, ma, mb)
		a = append(a, ma.Seq)
	}
	// A Slack-style thread: the root has no topic, its replies carry the
	// root's id as topic.
	root := &Message{ChatJID: "web:a", ID: "root"}
	r1 := &Message{ChatJID: "web:a", ID: "r1", Topic: "root"}
	r2 := &Message{ChatJID: "web:a", ID: "r2", Topic: "root"}
	mustInsert(t, s, root, r1, r2)

	tests := []struct {
		name string
		get  func() ([]Message, error)
		want []int64
	}{
		{"after 0", func() ([]Message, error) { return s.MessagesAfter(ctx, "web:a", 0, 3) }, a[:3]},
		{"after cursor", func() ([]Message, error) { return s.MessagesAfter(ctx, "web:a", a[6], 10) },
			[]int64{a[7], a[8], a[9], root.Seq, r1.Seq, r2.Seq}},
		{"after last", func() ([]Message, error) { return s.MessagesAfter(ctx, "web:a", r2.Seq, 10) }, []int64{}},
		{"after in unknown chat", func() ([]Message, error) { return s.MessagesAfter(ctx, "web:zzz", 0, 10) }, []int64{}},
		{"before newest", func() ([]Message, error) { return s.MessagesBefore(ctx, "web:a", 0, 3) },
			[]int64{root.Seq, r1.Seq, r2.Seq}},
		{"before cursor", func() ([]Message, error) { return s.MessagesBefore(ctx, "web:a", a[4], 2) }, a[2:4]},
		{"before first", func() ([]Message, error) { return s.MessagesBefore(ctx, "web:a", a[0], 5) }, []int64{}},
		{"thread newest", func() ([]Message, error) { return s.Thread(ctx, "web:a", "a1", 2) }, []int64{a[7], a[9]}},
		{"thread all", func() ([]Message, error) { return s.Thread(ctx, "web:a", "a1", 0) },
			[]int64{a[1], a[3], a[5], a[7], a[9]}},
		{"thread with root", func() ([]Message, error) { return s.Thread(ctx, "web:a", "root", 10) },
			[]int64{root.Seq, r1.Seq, r2.Seq}},
		{"thread other chat", func() ([]Message, error) { return s.Thread(ctx, "web:zzz", "a1", 10) }, []int64{}},
		{"no topic: main channel", func() ([]Message, error) { return s.Thread(ctx, "web:a", "", 3) },
			[]int64{a[6], a[8], root.Seq}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(seqsOf(got), tc.want) {
				t.Errorf("seqs = %v, want %v", seqsOf(got), tc.want)
			}
		})
	}
}

func TestClampLimit(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{-1, DefaultLimit}, {0, DefaultLimit}, {5, 5}, {MaxLimit + 1, MaxLimit}} {
		if got := clampLimit(tc.in); got != tc.want {
			t.Errorf("clampLimit(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// An update that leaves a message's text and attachments as they were (a
// Discord embed resolved, a pin: the platform sends the whole message
// again) is no edit: the message is not marked edited. A real edit is.
func TestEditWithoutChangeIsNoEdit(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	m := Message{ChatJID: "discord:1/2", ID: "77", Sender: "discord:user/7", Text: "see https://example.com/x", Time: time.Now()}
	if _, err := s.InsertMessage(ctx, &m); err != nil {
		t.Fatal(err)
	}
	same := Message{ChatJID: m.ChatJID, ID: m.ID, Sender: m.Sender, Text: m.Text}
	if existed, err := s.EditMessage(ctx, &same); err != nil || !existed || same.Seq != m.Seq {
		t.Fatalf("EditMessage unchanged = %v, %v, seq %d; want true, nil, seq %d", existed, err, same.Seq, m.Seq)
	}
	if got, err := s.MessageByID(ctx, m.ChatJID, m.ID); err != nil || !got.Edited.IsZero() {
		t.Errorf("after an update that changed nothing: edited %v, %v; want not edited", got.Edited, err)
	}
	real := Message{ChatJID: m.ChatJID, ID: m.ID, Sender: m.Sender, Text: "see https://example.com/y"}
	if _, err := s.EditMessage(ctx, &real); err != nil {
		t.Fatal(err)
	}
	if got, err := s.MessageByID(ctx, m.ChatJID, m.ID); err != nil || got.Edited.IsZero() || got.Text != real.Text {
		t.Errorf("after a real edit: %q edited %v, %v; want the new text, edited", got.Text, got.Edited, err)
	}
}
