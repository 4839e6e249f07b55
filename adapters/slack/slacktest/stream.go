package slacktest

import "net/url"

// Shown is what a channel showed of the bot at one moment: a message as it
// was posted, and again as each edit or streamed chunk left it.
type Shown struct {
	TS       string
	ThreadTS string
	Text     string // as sent: mrkdwn, or standard Markdown when Markdown is set
	Markdown bool
}

// Shown returns what channel showed of the bot so far, oldest first.
func (s *Server) Shown(channel string) []Shown {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Shown
	for _, sh := range s.shown {
		if sh.channel == channel {
			out = append(out, sh.Shown)
		}
	}
	return out
}

// RefuseStreams makes chat.startStream answer the error code (as Slack
// does for an app or workspace that may not stream: "not_allowed",
// "unknown_method"); "" makes streams work again.
func (s *Server) RefuseStreams(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = code
}

type shownIn struct {
	channel string
	Shown
}

// show records what m shows now. s.mu is held.
func (s *Server) show(c *Channel, m *Msg) {
	s.shown = append(s.shown, shownIn{c.ID, Shown{TS: m.TS, ThreadTS: m.ThreadTS, Text: m.Text, Markdown: m.Markdown}})
}

// stream serves chat.startStream, chat.appendStream and chat.stopStream as
// Slack does: a stream is a bot message of standard Markdown
// (markdown_text) that grows with each append until it is stopped; in a
// channel (not a DM) it needs the user it answers (recipient_user_id and
// recipient_team_id); chat.update refuses it while it streams.
func (s *Server) stream(method string, c *Channel, f url.Values) map[string]any {
	text := f.Get("markdown_text")
	if method == "chat.startStream" {
		if s.refuse != "" {
			return fail(s.refuse)
		}
		if c.Type != "im" && (f.Get("recipient_user_id") == "" || f.Get("recipient_team_id") == "") {
			return fail("invalid_arguments")
		}
		m := &Msg{TS: s.newTS(), User: BotUser, BotID: BotID, Text: text, ThreadTS: f.Get("thread_ts"), Markdown: true, Streaming: true}
		c.Messages = append(c.Messages, m)
		if text != "" {
			s.show(c, m)
		}
		return ok("channel", c.ID, "ts", m.TS)
	}
	m := s.find(c, f.Get("ts"))
	switch {
	case m == nil || m.Deleted:
		return fail("message_not_found")
	case !m.Streaming:
		return fail("message_not_in_streaming_state")
	case method == "chat.appendStream" && text == "":
		return fail("no_text")
	}
	m.Text += text
	m.Streaming = method == "chat.appendStream"
	if text != "" {
		s.show(c, m)
	}
	return ok("channel", c.ID, "ts", m.TS)
}
