package web

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testcdp"
	"switchboard/internal/testenv"
	"switchboard/internal/testwait"
)

// chromium is Debian's headless-capable browser; without it the test skips,
// or fails when CI is set.
const chromium = "/usr/bin/chromium"

// TestBrowserRendersMessages loads the chat page in headless Chromium and
// checks that its script fetched and rendered the room's messages, escaped.
// Set WEB_SCREENSHOT=path to keep a screenshot of the page. Without
// Chromium it skips, or fails when CI is set.
func TestBrowserRendersMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	// Chromium's virtual time stands still while a request is open, so
	// --virtual-time-budget would never run out with a live event stream:
	// end streams quickly; the page reconnects (and resumes) on its own.
	s := start(t, func(a *Adapter) { a.streamMaxAge = 500 * time.Millisecond })
	s.post(t, "lobby", `{"sender": "ann", "name": "Ann", "text": "Hello from ann, can you summarise today's tickets?"}`)
	s.g.reply(t, s.a, "web:lobby", "Sure. 3 tickets were opened today:\n- login fails on Safari\n- <b>export</b> is slow\n- typo on the pricing page")
	s.post(t, "lobby", `{"sender": "bob", "text": "Thanks! I'll take the Safari one.", "topic": "triage"}`)
	s.post(t, "kitchen", `{"sender": "eve", "text": "message from another room"}`)

	url := s.base + "/?room=lobby"
	dom := runChromium(t, "--dump-dom", url)
	for _, want := range []string{
		"Hello from ann, can you summarise",
		"I'll take the Safari one.",
		"&lt;b&gt;export&lt;/b&gt; is slow", // bot text rendered as text, not markup
		`class="msg bot"`,
		"# triage",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	if strings.Contains(dom, "another room") {
		t.Error("rendered DOM shows a message of another room")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	shot := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, "--screenshot="+shot, "--window-size=900,700", url)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10_000 {
		t.Fatalf("screenshot is %d bytes, want a non-trivial PNG", len(png))
	}
	if out := os.Getenv("WEB_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Errorf("keep screenshot: %v", err)
		}
	}
}

// TestBrowserShowsLiveReply: while the page is open, two turns' live
// replies grow; one finishes. The page shows the unfinished one as one
// draft with its newest text, and the finished one as its final message,
// once, in place of its draft. Without Chromium it skips, or fails when CI
// is set.
func TestBrowserShowsLiveReply(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	s := start(t, func(a *Adapter) { a.streamMaxAge = 2 * time.Second }) // see TestBrowserRendersMessages
	s.post(t, "lobby", `{"sender": "ann", "text": "Please check both services."}`)
	ctx := t.Context()
	chat := adapters.JID("web:lobby")
	first, _ := s.a.StartLive(ctx, adapters.Outbound{Chat: chat}, "turn-a")
	second, _ := s.a.StartLive(ctx, adapters.Outbound{Chat: chat}, "turn-b")

	type result struct {
		dom string
		err error
	}
	page := make(chan result, 1)
	go func() {
		dom, err := execChromium(t, "--dump-dom", s.base+"/?room=lobby")
		page <- result{dom, err}
	}()
	testwait.For(t, 60*time.Second, "the page's event stream", func() bool { return s.a.hub.count() > 0 })
	for _, u := range []struct {
		l    adapters.LiveReply
		text string
	}{{first, "Checking api: pending"}, {second, "Second look: starting"}, {first, "Checking api: ok, db: pending"}, {second, "Second look: halfway there"}} {
		if err := u.l.Update(ctx, u.text); err != nil {
			t.Fatal(err)
		}
	}
	// Finish drops drafts a stream has not taken yet: let the page's take
	// them, so that its final replaces a draft it shows.
	testwait.For(t, 10*time.Second, "the page's stream to take the drafts", func() bool { return s.a.hub.pendingDrafts() == 0 })
	const final = "All good: api ok, db ok"
	id, err := first.Finish(ctx, final)
	if err != nil {
		t.Fatal(err)
	}
	s.g.mu.Lock() // the gateway stores the final under Finish's id
	seq, _ := s.g.store(adapters.Inbound{Chat: chat, ID: id, Sender: "web:user/switchboard", Text: final, Time: time.Now(), FromBot: true})
	s.g.mu.Unlock()
	s.a.Stored(chat, seq)

	r := <-page
	if r.err != nil {
		t.Fatal(r.err)
	}
	dom := r.dom
	if n := strings.Count(dom, final); n != 1 {
		t.Errorf("the final reply shows %d times; want once", n)
	}
	if strings.Contains(dom, "Checking api") {
		t.Error("the finished turn's draft still shows beside its final message")
	}
	if n := strings.Count(dom, `data-draft="turn-b"`); n != 1 || !strings.Contains(dom, "Second look: halfway there") || strings.Contains(dom, "Second look: starting") {
		t.Errorf("the running turn shows %d drafts; want one, reading its newest text", n)
	}
	if n := strings.Count(dom, "msg bot draft"); n != 1 {
		t.Errorf("%d drafts on the page; want 1", n)
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}

// runChromium runs headless Chromium on args and returns its stdout.
func runChromium(t *testing.T, args ...string) string {
	t.Helper()
	out, err := execChromium(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// execChromium runs headless Chromium on args and returns its stdout; it may be
// called from any goroutine.
func execChromium(t *testing.T, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=3000",
	}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("chromium %v: %w\n%s", args, err, stderr.String())
	}
	return stdout.String(), nil
}

// TestBrowserPressesButton: the page shows a bot message's buttons (also
// after a reload); a click reaches Host.Press with the button's data as
// the name typed in the page, and the answer shows under the message;
// after EditButtons the buttons go and the text changes without a reload.
// Without Chromium it skips, or fails when CI is set.
func TestBrowserPressesButton(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	s := start(t, nil)
	s.host.PressFunc = func(_ context.Context, p adapters.Press) (string, error) {
		return "Allowed once, " + p.SenderName + ".", nil
	}
	chat := adapters.JID("web:lobby")
	s.post(t, "lobby", `{"sender": "ann", "text": "deploy please"}`)
	id, err := s.a.SendButtons(t.Context(), adapters.Outbound{Chat: chat, Text: "Run deploy.sh?"}, []adapters.Button{
		{Label: "Allow once", Data: "appr:5:allow", Style: adapters.StylePrimary}, {Label: "Deny", Data: "appr:5:deny", Style: adapters.StyleDanger}})
	if err != nil {
		t.Fatal(err)
	}
	b := testcdp.Open(t, chromium, "about:blank")
	b.Navigate(s.base + "/?room=lobby")
	buttons := `document.querySelectorAll('.msg[data-id="` + id.String() + `"] .buttons button').length`
	b.WaitFor("the two buttons", buttons+" === 2")
	b.Navigate(s.base + "/?room=lobby") // a reload keeps them
	b.WaitFor("the two buttons after a reload", buttons+" === 2")
	b.Eval(`document.getElementById("name").value = "Ann"`)
	b.Eval(`document.querySelector('.msg[data-id="` + id.String() + `"] .buttons button').click()`)
	b.WaitFor("the answer", `(document.querySelector('.msg .answer') || {}).textContent === `+testcdp.JSString("Allowed once, Ann."))
	if p := s.host.Presses(); len(p) != 1 || p[0].Data != "appr:5:allow" || p[0].Sender != "web:user/Ann" || p[0].Chat != chat || p[0].Message != id {
		t.Errorf("presses %+v; want appr:5:allow by web:user/Ann on %s", p, id)
	}
	if err := s.a.EditButtons(t.Context(), adapters.MessageRef{Chat: chat, ID: id}, "Allowed once by Ann", nil); err != nil {
		t.Fatal(err)
	}
	b.WaitFor("the buttons gone and the new text", buttons+` === 0 && document.querySelector('.msg[data-id="`+id.String()+`"] .text').textContent === "Allowed once by Ann"`)
}

// TestBrowserStopsDraft: a live reply started with the turn's Stop button
// shows it on its draft while the draft grows; a click reaches Host.Press
// as "stop:<turn>" naming the draft's id, and the final message that
// replaces the draft has no button. Without Chromium it skips, or fails
// when CI is set.
func TestBrowserStopsDraft(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	s := start(t, nil)
	s.host.PressFunc = func(context.Context, adapters.Press) (string, error) { return "Stopping.", nil }
	ctx := t.Context()
	chat := adapters.JID("web:lobby")
	s.post(t, "lobby", `{"sender": "ann", "text": "count slowly"}`)
	stop := adapters.Button{Label: "Stop", Data: "stop:t-42", Style: adapters.StyleDanger}
	l, err := s.a.StartLive(ctx, adapters.Outbound{Chat: chat, Buttons: []adapters.Button{stop}}, "t-42")
	if err != nil {
		t.Fatal(err)
	}
	b := testcdp.Open(t, chromium, "about:blank")
	b.Navigate(s.base + "/?room=lobby")
	testwait.For(t, 60*time.Second, "the page's event stream", func() bool { return s.a.hub.count() > 0 })
	draft := `document.querySelector('.msg.draft[data-draft="t-42"]')`
	stopButton := draft + `.querySelector('.buttons button.danger')`
	for _, text := range []string{"One", "One, two", "One, two, three"} {
		if err := l.Update(ctx, text); err != nil {
			t.Fatal(err)
		}
		b.WaitFor("the draft reading "+text+" with its Stop button",
			draft+` && `+draft+`.querySelector('.text').textContent === `+testcdp.JSString(text)+` && `+stopButton+`.textContent === "Stop"`)
	}
	b.WaitFor("one Stop button on the draft", draft+`.querySelectorAll('.buttons button').length === 1`)
	b.Eval(`document.getElementById("name").value = "Ann"`)
	b.Eval(stopButton + `.click()`)
	b.WaitFor("the answer", `(`+draft+`.querySelector('.answer') || {}).textContent === "Stopping."`)
	ref, _, _ := l.(adapters.LiveShown).Shown()
	if p := s.host.Presses(); len(p) != 1 || p[0].Data != "stop:t-42" || p[0].Sender != "web:user/Ann" || p[0].Chat != chat || p[0].Message != ref.ID {
		t.Errorf("presses %+v; want stop:t-42 by web:user/Ann on the draft's id %s", p, ref.ID)
	}
	const final = "One, two, three (stopped)"
	id, err := l.Finish(ctx, final)
	if err != nil {
		t.Fatal(err)
	}
	s.g.mu.Lock() // the gateway stores the final under Finish's id
	seq, _ := s.g.store(adapters.Inbound{Chat: chat, ID: id, Sender: "web:user/switchboard", Text: final, Time: time.Now(), FromBot: true})
	s.g.mu.Unlock()
	s.a.Stored(chat, seq)
	b.WaitFor("the final in place of the draft, without buttons",
		`!document.querySelector('.msg.draft') && [...document.querySelectorAll('.msg.bot')].some(li => li.querySelector('.text').textContent === `+
			testcdp.JSString(final)+` && !li.querySelector('.buttons'))`)
}

// The page retries a post that got no answer under the same id (stored
// once), but a post whose sender changed is another message: it gets a new
// id. Reusing the id, the server refused it (409: the id was stored with
// another sender) and the page kept failing "Not sent".
func TestBrowserNewSenderGetsANewID(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	s := start(t, nil)
	s.g.mu.Lock()
	s.g.lost = 1 // the first post is stored, its answer lost
	s.g.mu.Unlock()
	b := testcdp.Open(t, chromium, "about:blank")
	b.Navigate(s.base + "/?room=lobby")
	b.Eval(`document.getElementById("name").value = "ann"`)
	b.Eval(`document.getElementById("text").value = "hello"`)
	b.Eval(`document.getElementById("send").click()`)
	b.WaitFor("the failure shown", `document.getElementById("error").textContent.includes("Not sent")`)
	b.Eval(`document.getElementById("name").value = "bob"`)
	b.Eval(`document.getElementById("send").click()`)
	b.WaitFor("the post sent", `document.getElementById("text").value === ""`)
	msgs := s.g.stored()
	if len(msgs) != 2 || msgs[1].Sender != "web:user/bob" || msgs[1].Text != "hello" || msgs[0].ID == msgs[1].ID {
		t.Errorf("stored %+v; want ann's post and then bob's under another id", msgs)
	}
}

// A link whose #fragment is not valid percent-encoding (a typo, or a page
// elsewhere linking to the chat with "#%E0") opens the lobby instead of a
// dead page: decodeURIComponent throws on it.
func TestBrowserBadRoomFragmentOpensLobby(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	s := start(t, func(a *Adapter) { a.streamMaxAge = 500 * time.Millisecond }) // see TestBrowserRendersMessages
	s.post(t, "lobby", `{"sender": "ann", "text": "hello from the lobby"}`)
	dom := runChromium(t, "--dump-dom", s.base+"/#%E0%A4%A")
	if !strings.Contains(dom, "hello from the lobby") {
		t.Errorf("the page with a malformed #fragment does not show the lobby; DOM:\n%s", dom)
	}
}
