package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/internal/testagent"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// richAdapter is the fake platform with the optional capabilities: its own
// identity, a message limit, downloads, files and typing.
type richAdapter struct {
	*fakeAdapter
	limit  int
	typing chan string
	files  map[string][]byte // attachment ref -> content

	mu        sync.Mutex
	uploaded  []string       // "name: content"
	downloads map[string]int // attachment ref -> times downloaded
	limited   map[string]int // attachment ref -> rate limits (429) to answer first
	// stalled: a download of ref "stall" is sent here, and hangs until
	// its ctx ends (or release is closed: it then fails).
	stalled chan string
	release chan struct{}
}

func (r *richAdapter) downloadCount(ref string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.downloads[ref]
}

func (r *richAdapter) Self() (adapters.JID, bool) { return "test:user/bot", true }

func (r *richAdapter) Limits() adapters.Limits {
	return adapters.Limits{MaxText: r.limit, TypingEvery: 20 * time.Millisecond}
}

func (r *richAdapter) Typing(_ context.Context, chat adapters.JID, topic string) error {
	select {
	case r.typing <- string(chat) + "#" + topic:
	default:
	}
	return nil
}

func (r *richAdapter) Download(ctx context.Context, a adapters.Attachment) (io.ReadCloser, error) {
	if a.Ref == "stall" && r.stalled != nil {
		r.stalled <- a.Name
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.release:
			return nil, errors.New("download stalled, then failed")
		}
	}
	r.mu.Lock()
	if r.downloads == nil {
		r.downloads = map[string]int{}
	}
	r.downloads[a.Ref]++
	if r.limited[a.Ref] > 0 {
		r.limited[a.Ref]--
		r.mu.Unlock()
		return nil, &adapters.RetryAfterError{Wait: 50 * time.Millisecond}
	}
	r.mu.Unlock()
	b, ok := r.files[a.Ref]
	if !ok {
		return nil, errors.New("fetch https://files.example/bot123:SECRET/x: not found")
	}
	return io.NopCloser(strings.NewReader(string(b))), nil
}

func (r *richAdapter) SendFile(_ context.Context, m adapters.Outbound, f adapters.File) (adapters.MessageID, error) {
	b, err := io.ReadAll(f.Content)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uploaded = append(r.uploaded, f.Name+": "+string(b))
	return adapters.MessageID(fmt.Sprintf("file-%d", len(r.uploaded))), nil
}

func newRich(limit int) *richAdapter {
	return &richAdapter{fakeAdapter: newFakeAdapter("test"), limit: limit, typing: make(chan string, 100), files: map[string][]byte{}}
}

func richHarness(t *testing.T, ra *richAdapter, agent []string, modify func(*Options)) *harness {
	h := newHarness(t, harnessConfig{agent: agent, noStart: true, modify: func(o *Options) {
		o.Adapters = []adapters.Adapter{ra}
		if modify != nil {
			modify(o)
		}
	}})
	h.fa = ra.fakeAdapter
	var err error
	if h.g, err = New(h.opt); err != nil {
		t.Fatal(err)
	}
	h.opt.Adapters = []adapters.Adapter{ra}
	if h.g, err = New(h.opt); err != nil {
		t.Fatal(err)
	}
	h.start()
	return h
}

func (h *harness) deliver(in adapters.Inbound) int64 {
	h.t.Helper()
	if in.Sender == "" && in.Kind != adapters.KindDelete {
		in.Sender = "test:user/ann"
	}
	seq, err := h.g.Deliver(context.Background(), in)
	if err != nil {
		h.t.Fatal(err)
	}
	return seq
}

// Edits update the stored text and the search index, deletes mark the
// message, and neither starts a turn; redelivering them is harmless.
func TestEditAndDeleteStartNoTurn(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv, routes: []routing.Route{{Match: map[string]string{"platform": "test"}, Target: "main", Mode: routing.Observe}}})
	ctx := context.Background()
	seq := h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "the deploy is broken"})
	for range 2 {
		if got := h.deliver(adapters.Inbound{Kind: adapters.KindEdit, Chat: testChat, ID: "m1", Text: "the rollout is fine"}); got != seq {
			t.Fatalf("edit returned seq %d; want the message's %d", got, seq)
		}
	}
	m, _ := h.st.MessageByID(ctx, testChat, "m1")
	if m.Text != "the rollout is fine" || m.Edited.IsZero() {
		t.Errorf("after the edit: %+v", m)
	}
	if hits, _ := h.st.Search(ctx, "deploy", store.SearchOptions{}); len(hits) != 0 {
		t.Errorf("the old text is still found: %+v", hits)
	}
	if hits, _ := h.st.Search(ctx, "rollout", store.SearchOptions{}); len(hits) != 1 {
		t.Errorf("the new text is not found: %+v", hits)
	}
	// An edit of a message never stored is stored as a message.
	h.deliver(adapters.Inbound{Kind: adapters.KindEdit, Chat: testChat, ID: "m0", Sender: "test:user/bob", Text: "older, edited"})
	if m, err := h.st.MessageByID(ctx, testChat, "m0"); err != nil || m.Text != "older, edited" {
		t.Errorf("unknown edit stored as %+v, %v", m, err)
	}
	for range 2 {
		if got := h.deliver(adapters.Inbound{Kind: adapters.KindDelete, Chat: testChat, ID: "m1"}); got != seq {
			t.Fatalf("delete returned %d", got)
		}
	}
	if got := h.deliver(adapters.Inbound{Kind: adapters.KindDelete, Chat: testChat, ID: "never"}); got != 0 {
		t.Errorf("delete of an unknown message returned %d", got)
	}
	if m, _ := h.st.MessageByID(ctx, testChat, "m1"); !m.Deleted {
		t.Errorf("not marked deleted: %+v", m)
	}
	if p := h.pending(); len(p) != 0 {
		t.Errorf("edits or deletes queued turns for %v", p)
	}
	var work int
	if err := h.st.Read().QueryRow(`SELECT count(*) FROM work`).Scan(&work); err != nil || work != 1 {
		t.Errorf("%d work rows (%v); want only the first message's observe row", work, err)
	}
}

// A reaction to the bot's own message shows once in the owning folder's
// next prompt; it never starts a turn by itself. Other bots never trigger.
func TestReactionsAndOtherBots(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	h := richHarness(t, ra, rec.argv, nil)
	ctx := context.Background()
	// The bot's own message, stored by the outbox under its identity.
	h.send(testChat, "k1", "deployed", "main")
	h.waitSent(testChat, 1)
	testwait.For(t, 5*time.Second, "the bot's message stored", func() bool {
		_, err := h.st.MessageByID(ctx, testChat, "out-1")
		return err == nil
	})
	if m, _ := h.st.MessageByID(ctx, testChat, "out-1"); m.Sender != "test:user/bot" || !m.FromBot {
		t.Fatalf("the bot's message stored as %+v; want under its identity", m)
	}
	for range 2 {
		h.deliver(adapters.Inbound{Kind: adapters.KindReaction, Chat: testChat, ID: "out-1", SenderName: "Ann", Reaction: "👍"})
	}
	h.deliver(adapters.Inbound{Chat: testChat, ID: "b1", Sender: "test:user/otherbot", Text: "@bot ping", Verb: adapters.VerbMention, OtherBot: true})
	h.deliver(adapters.Inbound{Chat: testChat, ID: "echo", Sender: "test:user/bot", Text: "echo of my own", Verb: adapters.VerbMention})
	if p := h.pending(); len(p) != 0 {
		t.Fatalf("a reaction, another bot or the echo queued a turn: %v", p)
	}
	if m, _ := h.st.MessageByID(ctx, testChat, "echo"); !m.FromBot {
		t.Errorf("the echo from the bot's identity was not recognised: %+v", m)
	}
	if rs, _ := h.st.Reactions(ctx, testChat, "out-1"); len(rs) != 1 {
		t.Errorf("reactions %+v; want one", rs)
	}
	h.post(testChat, "m1", "thanks")
	h.waitSent(testChat, 2)
	h.post(testChat, "m2", "again")
	h.waitSent(testChat, 3)
	ps := rec.prompts(t)
	want := `<reaction chat="test:room/1" message_id="out-1" sender="test:user/ann" name="Ann" emoji="👍"`
	if len(ps) != 2 || strings.Count(ps[0], want) != 1 || strings.Contains(ps[1], "<reaction") {
		t.Fatalf("prompts %q; want the reaction once, in the first", ps)
	}
	if strings.Contains(ps[0], `id="b1"`) && !strings.Contains(ps[0], `other_bot="true"`) {
		t.Errorf("another bot's message shown unmarked:\n%s", ps[0])
	}
}

// Garbage from an adapter is refused with a clear error naming what is
// wrong, and nothing stored changes.
func TestDeliverRefusesGarbage(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok")})
	h.post(testChat, "keep", "stored before")
	for _, tc := range []struct {
		name string
		in   adapters.Inbound
		want string
	}{
		{"empty id", adapters.Inbound{Chat: testChat, Sender: "test:user/a", Text: "x"}, "message id"},
		{"bad chat", adapters.Inbound{Chat: "not a jid", ID: "1", Sender: "test:user/a"}, "chat"},
		{"bad sender", adapters.Inbound{Chat: testChat, ID: "2", Sender: "https://x", Text: "x"}, "sender"},
		{"10 MB text", adapters.Inbound{Chat: testChat, ID: "3", Sender: "test:user/a", Text: strings.Repeat("a", 10<<20)}, "10485760 bytes"},
		{"invalid utf-8", adapters.Inbound{Chat: testChat, ID: "4", Sender: "test:user/a", Text: "ok\xffno"}, "not valid UTF-8 (byte 2)"},
		{"unknown kind", adapters.Inbound{Kind: "poke", Chat: testChat, ID: "5", Sender: "test:user/a"}, `unknown kind "poke"`},
		{"reaction without emoji", adapters.Inbound{Kind: adapters.KindReaction, Chat: testChat, ID: "keep", Sender: "test:user/a"}, "emoji"},
		{"edit overwriting with garbage", adapters.Inbound{Kind: adapters.KindEdit, Chat: testChat, ID: "keep", Text: "\xc3"}, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.g.Deliver(context.Background(), tc.in)
			if !errors.Is(err, adapters.ErrBadMessage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Deliver: %v; want ErrBadMessage mentioning %q", err, tc.want)
			}
		})
	}
	if m, err := h.st.MessageByID(context.Background(), testChat, "keep"); err != nil || m.Text != "stored before" {
		t.Errorf("the stored message changed: %+v, %v", m, err)
	}
	var n int
	if err := h.st.Read().QueryRow(`SELECT count(*) FROM messages WHERE from_bot = 0`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d user messages stored (%v); want only the first", n, err)
	}
}

// Backfilled messages are stored once; only those younger than ten minutes
// trigger, older ones are context for the next turn.
func TestBackfillTriggersOnlyRecent(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv})
	old := adapters.Inbound{Chat: testChat, ID: "old", Text: "from an hour ago", Time: time.Now().Add(-time.Hour), Backfilled: true, Verb: adapters.VerbMention}
	h.deliver(old)
	if p := h.pending(); len(p) != 0 {
		t.Fatalf("an old backfilled message queued a turn: %v", p)
	}
	recent := adapters.Inbound{Chat: testChat, ID: "new", Text: "from a minute ago", Time: time.Now().Add(-time.Minute), Backfilled: true, Verb: adapters.VerbMention}
	h.deliver(recent)
	h.deliver(recent) // backfilled again after another reconnect
	h.waitSent(testChat, 1)
	ps := rec.prompts(t)
	if len(ps) != 1 || !strings.Contains(ps[0], "<observed>") || !strings.Contains(ps[0], `id="old"`) || !strings.Contains(ps[0], `id="new"`) {
		t.Fatalf("prompts %q; want one turn for the recent message with the old one observed", ps)
	}
	h.post(testChat, "after", "next")
	h.waitSent(testChat, 2)
	if n := len(rec.prompts(t)); n != 2 {
		t.Errorf("%d turns; the duplicate backfill was answered again", n)
	}
}

// Attachments are downloaded into the folder's inbox before the turn and
// listed by path; one over the cap, or one that fails, is listed with the
// reason, and no URL (token) reaches the prompt.
func TestAttachmentsDownloadedBeforeTurn(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.files["ref-photo"] = []byte("PNGDATA")
	ra.files["ref-big"] = []byte(strings.Repeat("x", 2000))
	h := richHarness(t, ra, rec.argv, func(o *Options) { o.MaxDownload = 1000 })
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m/1", Text: "see", Verb: adapters.VerbMention, Time: when, Attachments: []adapters.Attachment{
		{Name: "../cat.png", MIME: "image/png", Size: 7, Ref: "ref-photo"},
		{Name: "big.bin", Ref: "ref-big"},
		{Name: "gone.txt", Ref: "ref-missing"},
	}})
	h.waitSent(testChat, 1)
	p := rec.prompts(t)[0]
	if !strings.Contains(p, `<attachment path="inbox/2026-11-24/m_1-_cat.png" name="../cat.png" mime="image/png" size="7"/>`) {
		t.Errorf("photo not listed by path:\n%s", p)
	}
	b, err := os.ReadFile(filepath.Join(h.dir, "groups", "main", "inbox", "2026-11-24", "m_1-_cat.png"))
	if err != nil || string(b) != "PNGDATA" {
		t.Errorf("downloaded file: %q, %v", b, err)
	}
	if !strings.Contains(p, `name="big.bin" mime="" size="0" error="stopped at the 1000-byte cap`) {
		t.Errorf("the oversized file is not reported:\n%s", p)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "groups", "main", "inbox", "2026-11-24", "m_1-big.bin")); !os.IsNotExist(err) {
		t.Errorf("the oversized file was kept: %v", err)
	}
	if !strings.Contains(p, `name="gone.txt"`) || strings.Contains(p, "SECRET") || strings.Contains(p, "files.example") {
		t.Errorf("the failed download leaks its URL or is missing:\n%s", p)
	}
}

// An attachment whose platform stated no size (a Telegram photo without
// file_size, a Slack file shared before it was processed) is listed with
// the size of the file the folder holds, not size="0".
func TestAttachmentSizeIsWhatWasFetched(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.files["ref-photo"] = []byte("PNGDATA")
	h := richHarness(t, ra, rec.argv, nil)
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m/1", Text: "see", Verb: adapters.VerbMention, Time: when, Attachments: []adapters.Attachment{
		{Name: "photo.jpg", MIME: "image/jpeg", Ref: "ref-photo"},
	}})
	h.waitSent(testChat, 1)
	if p := rec.prompts(t)[0]; !strings.Contains(p, `<attachment path="inbox/2026-11-24/m_1-photo.jpg" name="photo.jpg" mime="image/jpeg" size="7"/>`) {
		t.Errorf("the photo is not listed with its 7 bytes:\n%s", p)
	}
}

// A download the platform rate-limits (429 with Retry-After) is tried
// again after the wait it asked for, so the turn gets the file; one still
// limited after three tries is listed with the reason.
func TestAttachmentRateLimitedIsRetried(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.files["ref-photo"] = []byte("PNGDATA")
	ra.files["ref-busy"] = []byte("never")
	ra.limited = map[string]int{"ref-photo": 2, "ref-busy": 10}
	h := richHarness(t, ra, rec.argv, nil)
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m/1", Text: "see", Verb: adapters.VerbMention, Time: when, Attachments: []adapters.Attachment{
		{Name: "cat.png", MIME: "image/png", Size: 7, Ref: "ref-photo"},
		{Name: "busy.txt", Ref: "ref-busy"},
	}})
	h.waitSent(testChat, 1)
	p := rec.prompts(t)[0]
	b, err := os.ReadFile(filepath.Join(h.dir, "groups", "main", "inbox", "2026-11-24", "m_1-cat.png"))
	if err != nil || string(b) != "PNGDATA" || ra.downloadCount("ref-photo") != 3 {
		t.Errorf("rate-limited photo: %q, %v after %d tries; want it after 3", b, err, ra.downloadCount("ref-photo"))
	}
	if !strings.Contains(p, `<attachment path="inbox/2026-11-24/m_1-cat.png"`) {
		t.Errorf("the photo is not listed by path:\n%s", p)
	}
	if !strings.Contains(p, `name="busy.txt"`) || !strings.Contains(p, "rate limited") || ra.downloadCount("ref-busy") != 3 {
		t.Errorf("the file still limited after %d tries is not listed with the reason:\n%s", ra.downloadCount("ref-busy"), p)
	}
}

// attachmentPaths maps each attachment's name in a prompt to its path.
func attachmentPaths(t *testing.T, prompt string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<attachment path="([^"]+)" name="([^"]+)"`).FindAllStringSubmatch(prompt, -1) {
		out[html.UnescapeString(m[2])] = m[1]
	}
	return out
}

// Platform message ids count per chat (Telegram): two chats routed to one
// folder each send message 1 with a photo named photo-1.jpg. Each turn is
// handed its own chat's photo, whether the sizes match (the second must not
// reuse the first's file) or differ (it must not overwrite it). Files whose
// names sanitize alike in one message stay apart.
func TestAttachmentsNeverCollide(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.files["a-same"], ra.files["b-same"] = []byte("photo of A"), []byte("photo of B")
	ra.files["a-diff"], ra.files["b-diff"] = []byte("A"), []byte("a longer photo of B")
	names := []string{"a b.txt", "a_b.txt", "отчёт.txt", "расчт.txt"}
	for i := range names {
		ra.files[fmt.Sprint("f", i)] = []byte(fmt.Sprint("content ", i))
	}
	h := richHarness(t, ra, rec.argv, nil)
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	type sent struct{ chat, id, ref string }
	var order []sent
	for _, kind := range []string{"same", "diff"} {
		for _, who := range []string{"a", "b"} {
			chat := adapters.JID("test:room/" + who)
			id := "1"
			if kind == "diff" {
				id = "2"
			}
			size := int64(len(ra.files[who+"-"+kind]))
			h.deliver(adapters.Inbound{Chat: chat, ID: adapters.MessageID(id), Text: "see", Verb: adapters.VerbMention, Time: when,
				Attachments: []adapters.Attachment{{Name: "photo-" + id + ".jpg", MIME: "image/jpeg", Size: size, Ref: who + "-" + kind}}})
			h.waitSent(string(chat), len(order)/2+1)
			order = append(order, sent{string(chat), id, who + "-" + kind})
		}
	}
	var files []adapters.Attachment
	for i, n := range names {
		files = append(files, adapters.Attachment{Name: n, Ref: fmt.Sprint("f", i)})
	}
	h.deliver(adapters.Inbound{Chat: "test:room/a", ID: "3", Text: "four files", Verb: adapters.VerbMention, Time: when, Attachments: files})
	h.waitSent("test:room/a", 3)

	prompts := rec.prompts(t)
	if len(prompts) != 5 {
		t.Fatalf("%d turns; want 5", len(prompts))
	}
	folder := filepath.Join(h.dir, "groups", "main")
	for i, s := range order {
		paths := attachmentPaths(t, prompts[i])
		path := paths["photo-"+s.id+".jpg"]
		b, err := os.ReadFile(filepath.Join(folder, path))
		if err != nil || string(b) != string(ra.files[s.ref]) {
			t.Errorf("%s's message %s was handed %s holding %q (%v); want %q", s.chat, s.id, path, b, err, ra.files[s.ref])
		}
	}
	paths := attachmentPaths(t, prompts[4])
	seen := map[string]bool{}
	for i, n := range names {
		b, err := os.ReadFile(filepath.Join(folder, paths[n]))
		if err != nil || string(b) != fmt.Sprint("content ", i) || seen[paths[n]] {
			t.Errorf("%q was handed %s holding %q (%v)", n, paths[n], b, err)
		}
		seen[paths[n]] = true
	}
	if !strings.HasSuffix(paths["отчёт.txt"], "-отчёт.txt") {
		t.Errorf("a Cyrillic name became %s; want it kept", paths["отчёт.txt"])
	}
}

// A retried batch reuses a downloaded file only while it is what was
// downloaded: the first attempt's agent overwrites it (same size) and
// fails; the second attempt is handed the platform's file again.
func TestAttachmentRefetchedWhenChanged(t *testing.T) {
	rec := newRecorder(t, `for f in inbox/*/*; do printf 'TAMPERED' > "$f"; done
[ "$n" = 1 ] && exit 1`)
	ra := newRich(0)
	ra.files["ref"] = []byte("ORIGINAL")
	h := richHarness(t, ra, rec.argv, func(o *Options) { o.RetryDelays = []time.Duration{time.Millisecond, time.Millisecond} })
	h.deliver(adapters.Inbound{Chat: testChat, ID: "1", Text: "see", Verb: adapters.VerbMention,
		Attachments: []adapters.Attachment{{Name: "doc.txt", Size: 8, Ref: "ref"}}})
	testwait.For(t, 20*time.Second, "the retry's reply", func() bool {
		return slices.ContainsFunc(h.fa.sentTo(testChat), func(m sentMsg) bool { return strings.Contains(m.Text, "reply 2") })
	})
	prompts := rec.prompts(t)
	if len(prompts) != 2 {
		t.Fatalf("%d turns; want a failed one and its retry", len(prompts))
	}
	if a, b := attachmentPaths(t, prompts[0])["doc.txt"], attachmentPaths(t, prompts[1])["doc.txt"]; a != b || a == "" {
		t.Fatalf("paths %q and %q; want the same path in both attempts", a, b)
	}
	if n := ra.downloadCount("ref"); n != 2 {
		t.Errorf("downloaded %d times; want again after the agent changed the file", n)
	}
}

// A long reply goes out as ordered parts within the platform's limit; when
// a part fails, the retry resumes after the parts already sent.
func TestOutboxSplitsAndResumes(t *testing.T) {
	ra := newRich(40)
	h := richHarness(t, ra, testagent.Script(t, "echo ok"), nil)
	text := strings.Repeat("alpha beta gamma delta ", 8) // 184 bytes
	ra.setFail(func(m adapters.Outbound, attempt int) error {
		if strings.HasSuffix(m.Key, "/3") && attempt == 1 {
			return errors.New("502 bad gateway")
		}
		return nil
	})
	h.send(testChat, "long", text, "main")
	testwait.For(t, 20*time.Second, "the long reply sent", func() bool { return h.outboxItem("long").Status == "sent" })
	sent := ra.sentTo(testChat)
	var words []string
	seen := map[string]bool{}
	for _, s := range sent {
		if adapters.UTF16Len(s.Text) > 40 {
			t.Errorf("part %q is longer than the limit", s.Text)
		}
		if seen[s.Key] {
			t.Errorf("part %s sent twice", s.Key)
		}
		seen[s.Key] = true
		words = append(words, strings.Fields(s.Text)...)
	}
	if strings.Join(words, " ") != strings.TrimSpace(text) {
		t.Errorf("parts reassemble to %q", strings.Join(words, " "))
	}
	if it := h.outboxItem("long"); it.PlatformID != sent[0].ID {
		t.Errorf("the reply's id is %q; want the first part's %q", it.PlatformID, sent[0].ID)
	}
}

// send_file goes through the outbox: the adapter receives the open file,
// and a FIFO in the folder is refused without blocking.
func TestSendFileThroughOutbox(t *testing.T) {
	ra := newRich(0)
	h := richHarness(t, ra, testagent.Script(t, "echo ok"), nil)
	dir := filepath.Join(h.dir, "groups", "main")
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), []byte("all green"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := h.g.outbox.send(ctx, ops.SendRequest{Chat: testChat, File: "report.txt", Text: "today", Folder: "main", Key: "f1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.g.outbox.send(ctx, ops.SendRequest{Chat: testChat, File: "pipe", Folder: "main", Key: "f2"}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "both files settled", func() bool {
		return h.outboxItem("f1").Status == "sent" && h.outboxItem("f2").Status == "failed"
	})
	if it := h.outboxItem("f2"); !strings.Contains(it.Error, "not a regular file") {
		t.Errorf("FIFO failed with %q", it.Error)
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if len(ra.uploaded) != 1 || ra.uploaded[0] != "report.txt: all green" {
		t.Errorf("uploaded %q", ra.uploaded)
	}
	if m, err := h.st.MessageByID(ctx, testChat, "file-1"); err != nil || len(m.Attachments) != 1 || m.Text != "today" {
		t.Errorf("the bot's file message stored as %+v, %v", m, err)
	}
}

// The typing indicator runs, refreshed, while a chat's turn runs.
func TestTypingWhileTurnRuns(t *testing.T) {
	ra := newRich(0)
	release := filepath.Join(t.TempDir(), "release")
	h := richHarness(t, ra, testagent.Script(t, `while [ ! -e `+release+` ]; do sleep 0.01; done; echo done`), nil)
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "hi", Topic: "t9", Verb: adapters.VerbMention})
	for range 3 { // the first call and two refreshes
		select {
		case got := <-ra.typing:
			if got != testChat+"#t9" {
				t.Fatalf("typing in %q", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no typing indicator while the turn runs")
		}
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.waitSent(testChat, 1)
}

// flakyAdapter fails its first runs, then connects; badToken refuses at once.
type flakyAdapter struct {
	name     string
	failures int
	badToken bool
	mu       sync.Mutex
	runs     int
}

func (f *flakyAdapter) Name() string { return f.name }
func (f *flakyAdapter) Send(context.Context, adapters.Outbound) (adapters.MessageID, error) {
	return "", errors.New("offline")
}
func (f *flakyAdapter) Run(ctx context.Context, host adapters.Host) error {
	f.mu.Lock()
	f.runs++
	n := f.runs
	f.mu.Unlock()
	if f.badToken {
		return fmt.Errorf("adapters.%s.token: 401: %w", f.name, adapters.ErrBadToken)
	}
	if n <= f.failures {
		return fmt.Errorf("connection reset (run %d)", n)
	}
	host.SetState(adapters.StateConnected, nil)
	<-ctx.Done()
	return nil
}

// An adapter that fails after start is restarted with backoff while the
// others keep working; a bad token at start stops the gateway with it.
func TestAdapterSupervision(t *testing.T) {
	flaky := &flakyAdapter{name: "flaky", failures: 3}
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok"), modify: func(o *Options) {
		o.Adapters = append(o.Adapters, flaky)
		o.RestartBackoff = [2]time.Duration{time.Millisecond, 4 * time.Millisecond}
	}})
	testwait.For(t, 10*time.Second, "the flaky adapter connected", func() bool {
		return h.g.AdapterStates()["flaky"].State == adapters.StateConnected
	})
	flaky.mu.Lock()
	runs := flaky.runs
	flaky.mu.Unlock()
	if runs != 4 {
		t.Errorf("Run called %d times; want 3 failures and a success", runs)
	}
	h.post(testChat, "m1", "still here")
	h.waitSent(testChat, 1)

	ctx := context.Background()
	bad := &flakyAdapter{name: "bad", badToken: true}
	g, err := New(Options{Store: h.st, Adapters: []adapters.Adapter{bad}, DataDir: t.TempDir(), Operator: "root",
		Agent: agent.Spec{Command: []string{"true"}}, Exe: "switchboard"})
	if err != nil {
		t.Fatal(err)
	}
	h.stop()
	err = g.Run(ctx)
	if !errors.Is(err, adapters.ErrBadToken) || !strings.Contains(err.Error(), "adapters.bad.token") {
		t.Fatalf("Run with a bad token: %v", err)
	}
	if st := g.AdapterStates()["bad"]; st.State != adapters.StateFailed || st.Err == "" {
		t.Errorf("state %+v; want failed with the error", st)
	}
}

// A batch runs at most three times when the agent is to blame, crashes of
// the gateway under it included; crashes alone never drop it.
func TestCrashedAttemptsCount(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv, noStart: true})
	ctx := context.Background()
	for chat, id := range map[string]string{testChat: "failed-and-crashed", "test:room/2": "only-crashed"} {
		m := &store.Message{ChatJID: adapters.JID(chat), ID: adapters.MessageID(id), Sender: "test:user/ann", Text: id, Verb: adapters.VerbMention}
		if _, err := h.st.EnqueueMessage(ctx, m, []store.WorkItem{{Folder: "main", ChatJID: adapters.JID(chat), Mode: "trigger", Trigger: store.TriggerMessage}}); err != nil {
			t.Fatal(err)
		}
	}
	// The first batch failed once and two turns were cut short by crashes;
	// the second only ever crashed, three times.
	if err := h.st.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE work SET attempts = 1, crashes = 2 WHERE chat_jid = ?`, testChat); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE work SET crashes = 3 WHERE chat_jid = 'test:room/2'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	h.start()
	sent := h.waitSent(testChat, 1)
	if !strings.Contains(sent[0].Text, "could not answer after 3 attempts") {
		t.Errorf("the failed-and-crashed batch: %q; want the final notice", sent[0].Text)
	}
	if got := h.waitSent("test:room/2", 1)[0].Text; !strings.HasPrefix(got, "reply") {
		t.Errorf("the batch that only crashed was answered %q; want the agent's reply", got)
	}
	for _, p := range rec.prompts(t) {
		if strings.Contains(p, "failed-and-crashed") {
			t.Error("the batch whose attempts were used up ran a fourth time")
		}
	}
}

// A file whose name is too long for the inbox is saved under a shortened
// name that keeps its extension: the agent still sees a .pdf as a .pdf.
func TestAttachmentLongNameKeepsExtension(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.files["ref-report"] = []byte("%PDF-1.7")
	ra.files["ref-ru"] = []byte("отчёт")
	h := richHarness(t, ra, rec.argv, nil)
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	long := "quarterly report " + strings.Repeat("with a very long title ", 10) + "final.pdf"
	ru := strings.Repeat("отчёт", 20) + ".docx"
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "see", Verb: adapters.VerbMention, Time: when, Attachments: []adapters.Attachment{
		{Name: long, MIME: "application/pdf", Ref: "ref-report"},
		{Name: ru, Ref: "ref-ru"},
	}})
	h.waitSent(testChat, 1)
	paths := attachmentPaths(t, rec.prompts(t)[0])
	for name, want := range map[string]string{long: "%PDF-1.7", ru: "отчёт"} {
		path := paths[name]
		b, err := os.ReadFile(filepath.Join(h.dir, "groups", "main", path))
		if err != nil || string(b) != want {
			t.Errorf("%q was handed %q holding %q (%v)", name, path, b, err)
		}
		if filepath.Ext(path) != filepath.Ext(name) || !utf8.ValidString(path) || !strings.HasPrefix(path, "inbox/2026-11-24/m1-") {
			t.Errorf("%q was saved as %q; want inbox/2026-11-24/m1-<name> ending in %s", name, path, filepath.Ext(name))
		}
	}
}

// An agent that leaves a FIFO where the next download's partial file goes
// (the path is predictable: Telegram counts message ids) does not hang the
// download, its turn and its turn slot for good: the file is fetched.
func TestAttachmentPartFIFODoesNotHang(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.files["ref-photo"] = []byte("PNGDATA")
	h := richHarness(t, ra, rec.argv, nil)
	dir := filepath.Join(h.dir, "groups", "main", "inbox", "2026-11-24")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, ".m1-cat.png.part"), 0o600); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "see", Verb: adapters.VerbMention, Time: when, Attachments: []adapters.Attachment{
		{Name: "cat.png", MIME: "image/png", Size: 7, Ref: "ref-photo"},
	}})
	h.waitSent(testChat, 1)
	path := attachmentPaths(t, rec.prompts(t)[0])["cat.png"]
	if b, err := os.ReadFile(filepath.Join(h.dir, "groups", "main", path)); err != nil || string(b) != "PNGDATA" {
		t.Errorf("the photo was handed as %q holding %q (%v)", path, b, err)
	}
}

// Two files of one message named "report.pdf.part" and "report.pdf" both
// arrive whole: the second's partial download does not land on the first.
func TestAttachmentPartNameNeverCollides(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.files["ref-a"] = []byte("first file")
	ra.files["ref-b"] = []byte("second file")
	h := richHarness(t, ra, rec.argv, nil)
	when := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "see", Verb: adapters.VerbMention, Time: when, Attachments: []adapters.Attachment{
		{Name: "report.pdf.part", Ref: "ref-a"},
		{Name: "report.pdf", Ref: "ref-b"},
	}})
	h.waitSent(testChat, 1)
	paths := attachmentPaths(t, rec.prompts(t)[0])
	for name, want := range map[string]string{"report.pdf.part": "first file", "report.pdf": "second file"} {
		b, err := os.ReadFile(filepath.Join(h.dir, "groups", "main", paths[name]))
		if paths[name] == "" || err != nil || string(b) != want {
			t.Errorf("%q was handed %q holding %q (%v); want %q", name, paths[name], b, err, want)
		}
	}
}

// The chat sees the bot typing while a turn's attachments download (a large
// file takes a while), not only once its agent starts.
func TestTypingWhileAttachmentsDownload(t *testing.T) {
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.stalled = make(chan string, 1)
	// The download never ends: shutdown ends it.
	h := richHarness(t, ra, rec.argv, func(o *Options) { o.DrainTimeout = 100 * time.Millisecond })
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "see the video", Verb: adapters.VerbMention,
		Attachments: []adapters.Attachment{{Name: "big.mp4", Ref: "stall"}}})
	select {
	case <-ra.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the attachment's download never started")
	}
	for len(ra.typing) > 0 { // what came before the download began
		<-ra.typing
	}
	select {
	case got := <-ra.typing:
		if got != string(testChat)+"#" {
			t.Errorf("typing in %q; want %s", got, testChat)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no typing indicator while the attachment downloads")
	}
}

// A turn whose work is dropped while it is prepared (here its rows deleted
// while its attachment downloads, as a task cancelled or a group removed
// drops them) does not run: MarkStarted refuses it (store.ErrBatchGone),
// the log says so and not that recording the start failed, and the
// folder's next message runs as usual.
func TestTurnWhoseWorkWasDroppedDoesNotRun(t *testing.T) {
	var logs testlog.Buffer
	rec := newRecorder(t, "")
	ra := newRich(0)
	ra.stalled, ra.release = make(chan string, 1), make(chan struct{})
	h := richHarness(t, ra, rec.argv, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "see this", Verb: adapters.VerbMention,
		Attachments: []adapters.Attachment{{Name: "big.bin", Ref: "stall"}}})
	select {
	case <-ra.stalled:
	case <-time.After(20 * time.Second):
		t.Fatal("the attachment's download never started")
	}
	db, err := sql.Open("sqlite3", filepath.Join(h.dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM work`); err != nil {
		t.Fatal(err)
	}
	close(ra.release)
	testwait.For(t, 10*time.Second, "the turn not started", func() bool {
		return strings.Contains(logs.String(), "turn not started: its work was dropped")
	})
	h.post(testChat, "m2", "and now?")
	if sent := h.waitSent(testChat, 1); sent[0].Text != "reply 1" {
		t.Fatalf("sent %q; want the next message answered", sent[0].Text)
	}
	if p := rec.prompts(t); len(p) != 1 || !strings.Contains(p[0], "and now?") {
		t.Errorf("prompts %q; want one, the next message's", p)
	}
	if strings.Contains(logs.String(), "record turn start") {
		t.Errorf("the dropped batch was logged as a failure:\n%s", logs.String())
	}
}
