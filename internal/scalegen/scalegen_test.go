package scalegen

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/store"
)

// TestGenerateMessages: a generated installation's database is one the
// gateway would have written. It opens without a migration, passes
// Check (schema, integrity, full-text index against the text, seqs,
// chats' last_seq), find_messages' search finds exactly the messages
// holding a word, and a message the gateway stores afterwards is
// searchable (the full-text trigger is back).
func TestGenerateMessages(t *testing.T) {
	ctx := context.Background()
	const chats, messages = 50, 20_000
	ds, err := Generate(ctx, Spec{Dir: t.TempDir(), Groups: 5, Chats: chats, Messages: messages, SeedStore: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, ds.DataDir); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(ds.DataDir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// Every message's words, counted here from the stored text.
	in := map[string]int{}
	perChat := map[string]int{}
	rows, err := st.Read().QueryContext(ctx, `SELECT chat_jid, text FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for rows.Next() {
		var chat, text string
		if err := rows.Scan(&chat, &text); err != nil {
			t.Fatal(err)
		}
		total++
		perChat[chat]++
		ws := strings.Fields(text)
		slices.Sort(ws)
		for _, w := range slices.Compact(ws) {
			in[w]++
		}
	}
	rows.Close()
	if total != messages || len(perChat) != chats {
		t.Fatalf("%d messages in %d chats, want %d in %d", total, len(perChat), messages, chats)
	}
	if in["the"] < total/4 || in["the"] < in["and"] || in["and"] < in["deploy"] {
		t.Errorf(`"the" in %d messages, "and" in %d, "deploy" in %d of %d: want the commonest words commonest`, in["the"], in["and"], in["deploy"], total)
	}

	// A word in a few messages: search finds each of them, no other.
	word := ""
	for _, w := range vocabulary(1)[len(commonWords):] {
		if in[w] >= 5 && in[w] <= 50 {
			word = w
			break
		}
	}
	if word == "" {
		t.Fatal("no word in 5 to 50 messages")
	}
	hits, err := st.Search(ctx, word, store.SearchOptions{Limit: store.MaxSearchLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != in[word] {
		t.Errorf("search %q: %d hits, want the %d messages holding it", word, len(hits), in[word])
	}
	for _, h := range hits {
		if !slices.Contains(strings.Fields(h.Text), word) {
			t.Errorf("search %q found message %d: %q", word, h.Seq, h.Text)
		}
	}
	// And by prefix (the prefix indexes).
	hits, err = st.Search(ctx, word[:3]+"*", store.SearchOptions{Limit: 5})
	if err != nil || len(hits) == 0 {
		t.Errorf("search %q*: %d hits, %v", word[:3], len(hits), err)
	}

	// The gateway stores a message: it is searchable, its seq follows
	// the generated ones, and its chat's last_seq is it.
	m := &store.Message{ChatJID: adapters.JID(Chat(0)), ID: "new-1", Sender: "web:user/ann", Text: "a quokkaword arrives"}
	if _, err := st.InsertMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	if m.Seq != messages+1 {
		t.Errorf("new message seq %d, want %d", m.Seq, messages+1)
	}
	hits, err = st.Search(ctx, "quokkaword", store.SearchOptions{})
	if err != nil || len(hits) != 1 || hits[0].Seq != m.Seq {
		t.Errorf("search for the new message: %v, %v", hits, err)
	}
	var last int64
	if err := st.Read().QueryRowContext(ctx, `SELECT last_seq FROM chats WHERE jid = ?`, Chat(0)).Scan(&last); err != nil || last != m.Seq {
		t.Errorf("chat's last_seq %d (%v), want %d", last, err, m.Seq)
	}
}
