package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters/telegram/telegramtest"
)

// streamLine is one claude-stream text delta, as Claude Code prints it.
func streamLine(text string) string {
	return `{"type":"stream_event","event":{"delta":{"text":"` + text + `","type":"text_delta"},"index":0,"type":"content_block_delta"},"session_id":"s-crash"}`
}

// A gateway killed (SIGKILL) while a turn streams its reply into a
// Telegram group, where the live reply is a message edited in place: at
// the next start the half-written message is removed before the turn runs
// again, and the chat ends up with the final reply once and nothing else
// of the bot's left showing.
func TestE2ELiveReplyKilledMidStream(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t)
	const final = "Part one of the answer, part two of the answer."
	agent := `printf '%s\n' '` + streamLine("Part one ") + `'
sleep 0.3
printf '%s\n' '` + streamLine("of the answer, ") + `'
while [ ! -e "$E2E_OUT/release" ]; do sleep 0.01; done
printf '%s\n' '` + streamLine("part two of the answer.") + `'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"` + final + `","session_id":"s-crash"}'
`
	dir := newE2E(t, e2eConfig{output: "claude-stream", agent: agent,
		adapters: "  telegram: {enabled: true, token: \"" + telegramtest.Token + "\", api_url: \"" + tg.URL() + "\", stream_interval: 100ms}\n",
		routes:   "  - {match: {chat_jid: \"telegram:group/1001234\"}, target: main}\n"})
	g := startGW(t, dir)
	msg, _ := tg.UserMessage(telegramtest.GroupID, "explain it", true, 0, 0)
	tg.Push("message", msg)
	live := tg.WaitBotMessage(t, telegramtest.GroupID, "the live reply showing the text so far", func(m telegramtest.Msg) bool {
		return strings.Contains(m.Text, "of the answer,") && !m.Deleted
	})
	g.kill()
	if err := os.WriteFile(filepath.Join(dir, "out", "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	g = startGW(t, dir)
	tg.WaitBotMessage(t, telegramtest.GroupID, "the final reply", func(m telegramtest.Msg) bool { return m.Text == final && !m.Deleted })
	// The cleanup ran before the turn ran again; stop to let anything late land.
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	var showing []telegramtest.Msg
	for _, m := range tg.Messages(telegramtest.GroupID) {
		if m.FromBot && !m.Deleted {
			showing = append(showing, m)
		}
		if m.ID == live.ID && !m.Deleted {
			t.Errorf("the live reply the killed gateway left still shows %q; want it removed", m.Text)
		}
	}
	if len(showing) != 1 || showing[0].Text != final {
		t.Errorf("the chat shows from the bot %+v; want the final %q once", showing, final)
	}
}
