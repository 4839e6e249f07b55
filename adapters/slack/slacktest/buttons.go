package slacktest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// Button is a Block Kit button as the fake holds it under a message.
type Button struct {
	Text, ActionID, Value, Style string
}

// Ephemeral is a chat.postEphemeral: a message only User saw.
type Ephemeral struct {
	Channel, User, Text, ThreadTS string
}

// applyBlocks takes a message's blocks as Slack does: a section's text is
// what the message shows (several sections one after the other; its text
// is then only the notification), an
// actions block's buttons are shown under it. It answers the error Slack
// gives for blocks it refuses ("" when they are fine); no blocks clears
// the message's buttons.
func applyBlocks(m *Msg, raw string) string {
	m.Buttons = nil
	if raw == "" {
		return ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Type, Text string
		} `json:"text"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Style    string `json:"style"`
			Text     struct {
				Type, Text string
			} `json:"text"`
		} `json:"elements"`
	}
	if json.Unmarshal([]byte(raw), &blocks) != nil || len(blocks) > 50 {
		return "invalid_blocks_format"
	}
	seen := map[string]bool{}
	sections := 0
	for _, b := range blocks {
		switch b.Type {
		case "section":
			if b.Text == nil || b.Text.Text == "" || len([]rune(b.Text.Text)) > 3000 || b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text" {
				return "invalid_blocks"
			}
			if sections == 0 {
				m.Text = "" // the sections show one after the other
			}
			m.Text += b.Text.Text
			sections++
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				return "invalid_blocks"
			}
			for _, e := range b.Elements {
				if e.Type != "button" || e.Text.Type != "plain_text" || e.Text.Text == "" || len([]rune(e.Text.Text)) > 75 ||
					e.ActionID == "" || len(e.ActionID) > 255 || seen[e.ActionID] || len(e.Value) > 2000 ||
					e.Style != "" && e.Style != "primary" && e.Style != "danger" {
					return "invalid_blocks"
				}
				seen[e.ActionID] = true
				m.Buttons = append(m.Buttons, Button{Text: e.Text.Text, ActionID: e.ActionID, Value: e.Value, Style: e.Style})
			}
		default:
			return "invalid_blocks"
		}
	}
	return ""
}

// postEphemeral records a message shown to one member of the channel.
func (s *Server) postEphemeral(c *Channel, f url.Values) map[string]any {
	user := f.Get("user")
	if _, ok := s.users[user]; !ok {
		return fail("user_not_found")
	}
	if f.Get("text") == "" && f.Get("blocks") == "" {
		return fail("no_text")
	}
	s.ephemeral = append(s.ephemeral, Ephemeral{Channel: c.ID, User: user, Text: f.Get("text"), ThreadTS: f.Get("thread_ts")})
	return ok("message_ts", s.newTS())
}

// Ephemerals returns the ephemeral messages posted so far, oldest first.
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ephemeral(nil), s.ephemeral...)
}

// UserPresses makes user press the button with value (its action_id too;
// "" for a press without one) under the bot's message ts in channel: a
// block_actions interaction, posted signed to InteractivityURL when set,
// else sent over Socket Mode. It returns once the bot acknowledged it (the
// HTTP status; 0 over Socket Mode) and the ephemeral messages the user was
// shown meanwhile.
func (s *Server) UserPresses(channel, ts, user, value string) (status int, shown []Ephemeral, err error) {
	s.mu.Lock()
	from := len(s.ephemeral)
	s.mu.Unlock()
	id, payload := s.pressPayload(channel, ts, user, value)
	if s.InteractivityURL != "" {
		status, err = s.PostInteraction(payload, Secret, time.Now())
	} else {
		env := &Envelope{ID: "env-" + id, Type: "interactive", Body: payload}
		s.mu.Lock()
		s.envelopes = append(s.envelopes, env)
		s.writeEnvelope(env)
		s.mu.Unlock()
		if !s.wait(10*time.Second, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return env.Acked
		}) {
			err = fmt.Errorf("fake slack: interactive envelope %s not acknowledged within 10s", env.ID)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.ephemeral[from:] {
		if e.User == user {
			shown = append(shown, e)
		}
	}
	return status, shown, err
}

// PostInteraction posts a block_actions payload (PressPayload) to
// InteractivityURL as a form, signed with secret at ts, and returns the
// status.
func (s *Server) PostInteraction(payload []byte, secret string, ts time.Time) (int, error) {
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	status, _, err := s.signedPost(s.InteractivityURL, "application/x-www-form-urlencoded", body, secret, ts, "")
	return status, err
}

// PressPayload is the block_actions payload of user pressing the button
// with value under message ts in channel.
func (s *Server) PressPayload(channel, ts, user, value string) []byte {
	_, p := s.pressPayload(channel, ts, user, value)
	return p
}

func (s *Server) pressPayload(channel, ts, user, value string) (string, []byte) {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("Act%06d", s.next)
	c := s.channels[channel]
	thread := ""
	if c != nil {
		if m := s.find(c, ts); m != nil {
			thread = m.ThreadTS
		}
	}
	name := s.users[user]
	s.mu.Unlock()
	container := map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false}
	if thread != "" {
		container["thread_ts"] = thread
	}
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "api_app_id": "A1", "token": "x", "trigger_id": id, "response_url": "https://hooks.slack.invalid/actions/" + id,
		"team": map[string]any{"id": Team, "domain": "fake"}, "channel": map[string]any{"id": channel},
		"user":      map[string]any{"id": user, "username": name, "name": name, "team_id": Team},
		"container": container, "message": map[string]any{"type": "message", "ts": ts, "user": BotUser},
		"actions": []map[string]any{{"type": "button", "action_id": value, "block_id": "buttons", "value": value,
			"text": map[string]any{"type": "plain_text", "text": "pressed"}, "action_ts": s.tsNow()}},
	})
	return id, payload
}
