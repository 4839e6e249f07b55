package main

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"switchboard/adapters/slack/slacktest"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testwait"
)

// promptAttachments maps each attachment's name in a prompt to its path.
func promptAttachments(prompt string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<attachment path="([^"]+)" name="([^"]+)"`).FindAllStringSubmatch(prompt, -1) {
		out[html.UnescapeString(m[2])] = m[1]
	}
	return out
}

// Telegram counts message ids per chat: two private chats routed to one
// folder each send message 1 with a photo (named photo-1.jpg by the
// adapter, of the same size). Each turn is handed its own user's photo.
func TestE2EAttachmentsTelegramPerChatIDs(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t)
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  telegram: {enabled: true, token: \"" + telegramtest.Token + "\", api_url: \"" + tg.URL() + "\"}\n",
		routes:   "  - {match: {chat_jid: \"telegram:user/*\"}, target: main}\n"})
	photos := map[int64][]byte{7: []byte("photo of user 7"), 8: []byte("photo of user 8")}
	g := startGW(t, dir)
	for _, user := range []int64{7, 8} {
		fileID := fmt.Sprint("photo-", user)
		tg.AddFile(fileID, photos[user])
		tg.Push("message", map[string]any{"message_id": 1, "date": time.Now().Unix(),
			"chat": map[string]any{"id": user, "type": "private", "first_name": "U"},
			"from": map[string]any{"id": user, "is_bot": false, "first_name": "U"}, "caption": "look",
			"photo": []any{map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID, "width": 10, "height": 10, "file_size": len(photos[user])}}})
		tg.WaitBotMessage(t, user, "the reply to user "+fmt.Sprint(user), func(telegramtest.Msg) bool { return true })
	}
	for n, user := range []int64{7, 8} {
		p := turnFile(t, dir, "main", "prompt", n+1)
		path := promptAttachments(p)["photo-1.jpg"]
		b, err := os.ReadFile(filepath.Join(dir, "data", "groups", "main", path))
		if path == "" || err != nil || string(b) != string(photos[user]) {
			t.Errorf("user %d's turn was handed %q holding %q (%v); want %q\n%s", user, path, b, err, photos[user], p)
		}
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// One Slack message with four files whose names sanitize alike lands as
// four files, each with its own content.
func TestE2EAttachmentsSlackFourFiles(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  slack: {enabled: true, mode: socket, bot_token: " + slacktest.BotToken + ", app_token: " + slacktest.AppToken +
			`, api_url: "` + s.URL() + `"}` + "\n",
		routes: "  - {match: {platform: slack}, target: main}\n"})
	g := startGW(t, dir)
	testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
	names := []string{"a b.txt", "a_b.txt", "отчёт.txt", "расчт.txt"}
	var files []slacktest.File
	for i, n := range names {
		files = append(files, slacktest.File{Name: n, MIME: "text/plain", Data: []byte(fmt.Sprint("content of file ", i))})
	}
	if _, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@UBOT> four files", Mention: true, Files: files}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the bot's reply", func() bool {
		for _, m := range s.Messages("C1") {
			if m.User == slacktest.BotUser {
				return true
			}
		}
		return false
	})
	paths := promptAttachments(turnFile(t, dir, "main", "prompt", 1))
	seen := map[string]bool{}
	for i, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, "data", "groups", "main", paths[n]))
		if paths[n] == "" || seen[paths[n]] || err != nil || string(b) != fmt.Sprint("content of file ", i) {
			t.Errorf("%q was handed %q holding %q (%v)", n, paths[n], b, err)
		}
		seen[paths[n]] = true
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}
