package gateway

import (
	"context"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testagent"
)

// historyAdapter is the fake platform with a history to fetch.
type historyAdapter struct {
	*fakeAdapter
	history []adapters.Inbound
}

func (h historyAdapter) FetchHistory(_ context.Context, chat adapters.JID, _ adapters.HistoryQuery) ([]adapters.Inbound, error) {
	return h.history, nil
}

// fetch_history from the platform stores what it fetched (never a turn)
// and shows each message as the store keeps it, under its seq: a message
// whose adapter set no verb is a plain message in both.
func TestFetchHistoryShowsMessagesAsStored(t *testing.T) {
	ha := historyAdapter{fakeAdapter: newFakeAdapter("test"), history: []adapters.Inbound{
		{Chat: testChat, ID: "h1", Sender: "test:user/ann", SenderName: "Ann", Text: "from before", Time: time.Unix(100, 0)},
		{Chat: testChat, ID: "h2", Sender: "test:user/bob", Text: "@bot hi", Time: time.Unix(200, 0), Verb: adapters.VerbMention, ReplyTo: "h1"},
	}}
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok"), noStart: true, modify: func(o *Options) {
		o.Adapters = []adapters.Adapter{ha}
	}})
	h.fa = ha.fakeAdapter
	var err error
	if h.g, err = New(h.opt); err != nil {
		t.Fatal(err)
	}
	h.start()
	ctx := context.Background()
	got, source, err := mcpBackend{g: h.g}.FetchHistory(ctx, testChat, "", 10)
	if err != nil || source != "platform" || len(got) != 2 {
		t.Fatalf("FetchHistory = %d messages from %q, %v; want the platform's 2", len(got), source, err)
	}
	for _, m := range got {
		stored, err := h.st.MessageByID(ctx, testChat, m.ID)
		if err != nil {
			t.Fatalf("message %s not stored: %v", m.ID, err)
		}
		if m.Seq != stored.Seq || m.Sender != stored.Sender || m.Text != stored.Text || m.Verb != stored.Verb || m.ReplyTo != stored.ReplyTo {
			t.Errorf("shown %+v\nstored %+v", m, stored)
		}
	}
	if got[0].Verb != adapters.VerbMessage || got[1].Verb != adapters.VerbMention || got[1].ReplyTo != "h1" {
		t.Errorf("verbs %q, %q and reply_to %q; want message, mention, h1", got[0].Verb, got[1].Verb, got[1].ReplyTo)
	}
}
