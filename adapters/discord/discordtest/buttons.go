package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Button is a button component as the fake holds it under a message.
type Button struct {
	Label    string
	CustomID string
	Style    int // 1 primary, 2 secondary, 3 success, 4 danger
}

// Answer is the response the bot gave to one interaction.
type Answer struct {
	Type    int // 4: a message, 6: a deferred update (no message)
	Content string
	Flags   int // 64: ephemeral, shown to the presser only
	Late    bool
}

// interactionDeadline is how long Discord waits for an interaction's response.
const interactionDeadline = 3 * time.Second

type interaction struct {
	token    string
	sent     time.Time
	answered bool
	answer   Answer
}

// components parses a message's components as Discord does for buttons:
// action rows (at most 5) of at most 5 buttons, each with a label of at
// most 80 characters and a custom_id of 1-100 unique within the message.
// ok false: refused with 400 Invalid Form Body.
func components(raw json.RawMessage) (buttons []Button, ok bool) {
	var rows []struct {
		Type       int `json:"type"`
		Components []struct {
			Type     int    `json:"type"`
			Label    string `json:"label"`
			Style    int    `json:"style"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	if json.Unmarshal(raw, &rows) != nil || len(rows) > 5 {
		return nil, false
	}
	seen := map[string]bool{}
	for _, row := range rows {
		if row.Type != 1 || len(row.Components) == 0 || len(row.Components) > 5 {
			return nil, false
		}
		for _, c := range row.Components {
			if c.Type != 2 || c.Style < 1 || c.Style > 4 || c.CustomID == "" || len(c.CustomID) > 100 ||
				len([]rune(c.Label)) > 80 || seen[c.CustomID] {
				return nil, false
			}
			seen[c.CustomID] = true
			buttons = append(buttons, Button{Label: c.Label, CustomID: c.CustomID, Style: c.Style})
		}
	}
	return buttons, true
}

// interactionCallback answers POST /interactions/{id}/{token}/callback:
// once per interaction, within 3 s of it (later: 10062 Unknown interaction).
func (f *Server) interactionCallback(w http.ResponseWriter, r *http.Request, id, token string) {
	var body struct {
		Type int `json:"type"`
		Data struct {
			Content string `json:"content"`
			Flags   int    `json:"flags"`
		} `json:"data"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notify()
	in, ok := f.interactions[id]
	switch {
	case !ok || in.token != token || time.Since(in.sent) > interactionDeadline:
		if ok {
			in.answer.Late = true
		}
		writeJSON(w, 404, map[string]any{"message": "Unknown interaction", "code": 10062})
		return
	case in.answered:
		writeJSON(w, 400, map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
		return
	case body.Type != 4 && body.Type != 6 && body.Type != 7:
		writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	case body.Type == 4 && (body.Data.Content == "" || len([]rune(body.Data.Content)) > 2000):
		writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	in.answered, in.answer = true, Answer{Type: body.Type, Content: body.Data.Content, Flags: body.Data.Flags}
	w.WriteHeader(http.StatusNoContent)
}

// UserPresses dispatches INTERACTION_CREATE: the user pressed the button
// with customID (sent as is, "" for none) under message id in channel ch.
// It returns the interaction's id.
func (f *Server) UserPresses(ch, id, customID string) string {
	return f.PressBy(ch, id, customID, UserID, "Ann")
}

// PressBy is UserPresses by another user (its id and display name).
func (f *Server) PressBy(ch, id, customID, userID, name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	iid := strconv.Itoa(f.nextID)
	token := "tok-" + iid
	f.interactions[iid] = &interaction{token: token, sent: time.Now()}
	user := map[string]any{"id": userID, "username": strings.ToLower(name), "global_name": name}
	d := map[string]any{"id": iid, "application_id": BotID, "type": 3, "token": token, "version": 1, "channel_id": ch,
		"data": map[string]any{"custom_id": customID, "component_type": 2}}
	if m := f.find(ch, id); m != nil {
		d["message"] = f.msgObj(m)
	} else {
		d["message"] = map[string]any{"id": id, "channel_id": ch}
	}
	if ch == DMChan {
		d["user"] = user
	} else {
		d["guild_id"], d["member"] = GuildID, map[string]any{"user": user, "roles": []any{}, "nick": ""}
	}
	f.dispatch("INTERACTION_CREATE", d)
	return iid
}

// WaitAnswered waits until the bot answered interaction iid and returns
// its answer.
func (f *Server) WaitAnswered(t testing.TB, iid string) Answer {
	t.Helper()
	var a Answer
	f.WaitFor(t, fmt.Sprintf("interaction %s answered", iid), func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		in := f.interactions[iid]
		a = in.answer
		return in.answered || in.answer.Late
	})
	return a
}
