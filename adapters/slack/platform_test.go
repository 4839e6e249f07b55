package slack_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/markdown"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

// platform is adaptertest.Platform over the fake Slack, in one mode.
type platform struct {
	s      *slacktest.Server
	mode   string
	thread string
	a      *slack.Adapter
}

func newPlatform(mode string) func(t *testing.T) adaptertest.Platform {
	return func(t *testing.T) adaptertest.Platform {
		s := slacktest.New(t)
		p := &platform{s: s, mode: mode}
		p.thread = s.AddMessage("C1", "U2", "a thread starts here", "")
		return p
	}
}

func newAdapter(s *slacktest.Server, mode string) *slack.Adapter {
	return slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: mode,
		SigningSecret: slacktest.Secret, Listen: "127.0.0.1:0", APIURL: s.URL(), PingInterval: 10 * time.Second,
		PostInterval: 10 * time.Millisecond}) // the pacing itself: TestTiersBurstThenPace
}

func (p *platform) NewAdapter(t *testing.T) adapters.Adapter {
	p.a = newAdapter(p.s, p.mode)
	return p.a
}

func (p *platform) emitter(t *testing.T) {
	if p.mode == slack.ModeEvents && p.s.EventsURL == "" {
		p.s.EventsURL = "http://" + p.a.Addr().String() + slack.EventsPath
		p.s.InteractivityURL = "http://" + p.a.Addr().String() + slack.InteractivityPath
	}
}

func (p *platform) Group() (adapters.JID, string) { return "slack:T1/channel/C1", p.thread }
func (p *platform) DM() adapters.JID              { return "slack:T1/dm/D1" }

func channel(chat adapters.JID) string { return chat.Room()[strings.LastIndex(chat.Room(), "/")+1:] }

func (p *platform) UserPosts(t *testing.T, post adaptertest.Post) adapters.MessageID {
	t.Helper()
	p.emitter(t)
	text := post.Text
	if post.Mention {
		text = "<@" + slacktest.BotUser + "> " + text
	}
	fp := slacktest.Post{Channel: channel(post.Chat), User: "U1", Text: text, ThreadTS: post.Topic, Mention: post.Mention}
	if fp.ThreadTS == "" {
		fp.ThreadTS = string(post.ReplyTo)
	}
	if post.Attachment != nil {
		fp.File = &slacktest.File{Name: post.AttachmentName, MIME: "application/octet-stream", Data: post.Attachment}
	}
	ts, err := p.s.UserPosts(fp)
	if err != nil {
		t.Fatalf("user posts: %v", err)
	}
	return adapters.MessageID(ts)
}

func (p *platform) UserEdits(t *testing.T, chat adapters.JID, id adapters.MessageID, text string) bool {
	p.emitter(t)
	if err := p.s.UserEdits(channel(chat), string(id), text); err != nil {
		t.Fatalf("user edits: %v", err)
	}
	return true
}

func (p *platform) UserDeletes(t *testing.T, chat adapters.JID, id adapters.MessageID) bool {
	p.emitter(t)
	if err := p.s.UserDeletes(channel(chat), string(id)); err != nil {
		t.Fatalf("user deletes: %v", err)
	}
	return true
}

func (p *platform) UserReacts(t *testing.T, chat adapters.JID, id adapters.MessageID, emoji string) bool {
	p.emitter(t)
	if err := p.s.UserReacts(channel(chat), string(id), "U1", emoji); err != nil {
		t.Fatalf("user reacts: %v", err)
	}
	return true
}

// shown is how Slack displays mrkdwn: markers gone, links as their label.
func shown(mrkdwn string) string {
	s := linkRe.ReplaceAllString(mrkdwn, "$2")
	s = italicRe.ReplaceAllString(s, "$1$2$3")
	s = strings.NewReplacer("*", "", "~", "", "`", "").Replace(s)
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// shownAs is how Slack displays a message's text: mrkdwn, or the standard
// Markdown of a stream.
func shownAs(text string, isMarkdown bool) string {
	if isMarkdown {
		return markdown.Plain(strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text))
	}
	return shown(text)
}

// WatchLive implements adaptertest.LiveWatcher: what the chat showed of the
// bot since, each message as posted and as each edit or chunk left it.
func (p *platform) WatchLive(t *testing.T, chat adapters.JID) func() []string {
	from := len(p.s.Shown(channel(chat)))
	return func() []string {
		var out []string
		for _, sh := range p.s.Shown(channel(chat))[from:] {
			out = append(out, shownAs(sh.Text, sh.Markdown))
		}
		return out
	}
}

func (p *platform) BotMessages(chat adapters.JID) []adaptertest.Message {
	var out []adaptertest.Message
	for _, m := range p.s.Messages(channel(chat)) {
		if m.User != slacktest.BotUser {
			continue
		}
		bm := adaptertest.Message{ID: adapters.MessageID(m.TS), Text: shownAs(m.Text, m.Markdown), Raw: m.Text, Topic: m.ThreadTS, Deleted: m.Deleted,
			Pinned: m.Pinned, Reactions: m.Reactions}
		for _, b := range m.Buttons {
			bm.Buttons = append(bm.Buttons, adapters.Button{Label: b.Text, Data: b.Value, Style: adapters.ButtonStyle(b.Style)})
		}
		if len(m.Files) > 0 {
			bm.File, bm.FileData = m.Files[0].Name, m.Files[0].Data
		}
		out = append(out, bm)
	}
	return out
}

// UserPresses presses a button as U1 (alice, who posts UserPosts) and
// returns what Slack showed her alone.
func (p *platform) UserPresses(t *testing.T, chat adapters.JID, id adapters.MessageID, data string) string {
	t.Helper()
	p.emitter(t)
	status, shown, err := p.s.UserPresses(channel(chat), string(id), "U1", data)
	if err != nil || p.mode == slack.ModeEvents && status != http.StatusOK {
		t.Fatalf("press: status %d, %v; want it acknowledged (200)", status, err)
	}
	var texts []string
	for _, e := range shown {
		texts = append(texts, e.Text)
	}
	return strings.Join(texts, "\n")
}

func (p *platform) RateLimit(wait time.Duration)      { p.s.RateLimit(wait) }
func (p *platform) RateLimited() (at, next time.Time) { return p.s.RateLimited() }
func (p *platform) RateLimitFiles(wait time.Duration) { p.s.RateLimitFiles(wait) }
func (p *platform) RejectFormatting()                 { p.s.RejectFormatting() }
func (p *platform) Disconnect() {
	if p.mode == slack.ModeSocket {
		p.s.Disconnect()
	}
}

func TestConformanceSocketMode(t *testing.T) { adaptertest.Run(t, newPlatform(slack.ModeSocket)) }
func TestConformanceEventsAPI(t *testing.T)  { adaptertest.Run(t, newPlatform(slack.ModeEvents)) }

var (
	linkRe   = regexp.MustCompile(`<([^|>]+)\|([^>]*)>`)
	italicRe = regexp.MustCompile(`(^|\W)_([^_]+)_(\W|$)`)
)
