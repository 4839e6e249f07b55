package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Button is an inline keyboard button as the fake chat shows it.
type Button struct {
	Text  string
	Data  string // callback_data
	Style string
}

// keyboard parses a request's reply_markup as Telegram does for an inline
// keyboard: callback buttons with 1-64 bytes of data, copy_text only with
// a text. ok is false (and the refusal answered) when it is invalid; an
// absent reply_markup is no keyboard.
func keyboard(w http.ResponseWriter, raw string) (buttons []Button, ok bool) {
	if raw == "" {
		return nil, true
	}
	var kb struct {
		Rows [][]struct {
			Text     string `json:"text"`
			Data     string `json:"callback_data"`
			Style    string `json:"style"`
			CopyText *struct {
				Text string `json:"text"`
			} `json:"copy_text"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &kb); err != nil || kb.Rows == nil {
		reply(w, 400, "Bad Request: can't parse reply keyboard markup JSON object", nil)
		return nil, false
	}
	for _, row := range kb.Rows {
		for _, b := range row {
			switch {
			case b.CopyText != nil && b.CopyText.Text == "":
				reply(w, 400, "Bad Request: BUTTON_COPY_TEXT_INVALID", nil)
				return nil, false
			case b.Data == "" || len(b.Data) > 64:
				reply(w, 400, "Bad Request: BUTTON_DATA_INVALID", nil)
				return nil, false
			case b.Style != "" && b.Style != "primary" && b.Style != "danger" && b.Style != "success":
				reply(w, 400, "Bad Request: can't parse inline keyboard button: unknown style", nil)
				return nil, false
			}
			buttons = append(buttons, Button{Text: b.Text, Data: b.Data, Style: b.Style})
		}
	}
	return buttons, true
}

func sameKeyboard(a, b []Button) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// answerCallbackQuery records the answer to a callback query: once per
// query, at most 200 characters.
func (f *Server) answerCallbackQuery(w http.ResponseWriter, r request) {
	id := r.params["callback_query_id"]
	q, ok := f.queries[id]
	switch {
	case !ok:
		reply(w, 400, "Bad Request: query is too old and response timeout expired or query ID is invalid", nil)
		return
	case q.answered:
		reply(w, 400, "Bad Request: query is too old and response timeout expired or query ID is invalid", nil)
		return
	case utf8.RuneCountInString(r.params["text"]) > 200:
		reply(w, 400, "Bad Request: MESSAGE_TOO_LONG", nil)
		return
	}
	q.answered, q.answer = true, r.params["text"]
	reply(w, 200, "", true)
}

type query struct {
	answered bool
	answer   string
}

// Press queues a callback_query update: user 7 pressed the button with
// data (sent as is, "" for none) under message id in chat. It returns the
// query's id.
func (f *Server) Press(chat int64, id int, data string) string {
	return f.PressBy(chat, id, data, UserID, "Ann")
}

// PressBy is Press by another user (id user, first name name).
func (f *Server) PressBy(chat int64, id int, data string, user int64, name string) string {
	f.mu.Lock()
	f.nextQuery++
	qid := strconv.Itoa(f.nextQuery)
	f.queries[qid] = &query{}
	msg := map[string]any{"message_id": id, "date": time.Now().Unix(), "chat": ChatObj(chat),
		"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Switchboard", "username": BotName}}
	if m := f.find(chat, id); m != nil {
		msg["text"] = m.Text
		if m.Thread != 0 {
			msg["message_thread_id"], msg["is_topic_message"] = m.Thread, true
		}
	}
	f.mu.Unlock()
	q := map[string]any{"id": qid, "chat_instance": "42", "message": msg,
		"from": map[string]any{"id": user, "is_bot": false, "first_name": name, "username": strings.ToLower(name)}}
	if data != "" {
		q["data"] = data
	} else {
		q["game_short_name"] = "snake"
	}
	f.Push("callback_query", q)
	return qid
}

// WaitAnswered waits until the bot answered callback query qid and returns
// the answer's text.
func (f *Server) WaitAnswered(t testing.TB, qid string) string {
	t.Helper()
	var answer string
	f.WaitFor(t, fmt.Sprintf("callback query %s answered", qid), func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		q := f.queries[qid]
		answer = q.answer
		return q.answered
	})
	return answer
}
