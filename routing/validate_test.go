package routing

import (
	"errors"
	"strings"
	"testing"

	"switchboard/groups"
)

func TestValidateMatch(t *testing.T) {
	cases := []struct {
		name    string
		match   map[string]string
		wantErr string // substring; "" means valid
	}{
		{"nil is a catch-all", nil, ""},
		{"empty is a catch-all", map[string]string{}, ""},
		{"every key", map[string]string{"platform": "web", "room": "*", "chat_jid": "web:*", "sender": "web:user/*", "verb": "mention", "topic": "**"}, ""},
		{"unknown key named with valid list", map[string]string{"channel": "x"}, `unknown match key "channel"; valid keys are platform, room, chat_jid, sender, verb, topic`},
		{"empty glob", map[string]string{"sender": ""}, "match key sender: empty glob"},
		{"too long", map[string]string{"topic": strings.Repeat("x", 513)}, "match key topic: glob is 513 bytes, at most 512"},
		{"max length ok", map[string]string{"topic": strings.Repeat("x", 512)}, ""},
		{"newline", map[string]string{"room": "a\nb"}, "match key room: glob \"a\\nb\" has control character U+000A"},
		{"DEL", map[string]string{"room": "a\x7f"}, "control character U+007F"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateMatch(c.match)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateMatch = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("ValidateMatch = %v, want error containing %q", err, c.wantErr)
			}
			if !errors.Is(err, ErrInvalidRoute) {
				t.Errorf("error %v does not wrap ErrInvalidRoute", err)
			}
		})
	}
}

// TestValidateNewMatch: a glob no message can match is refused when a route
// is added, naming the key and saying why; such a route stored earlier still
// loads. route add took verb=mentoin (it never triggered, yet as the owner of
// every chat it captured their replies and tools) and chat_jid=lobby.
func TestValidateNewMatch(t *testing.T) {
	cases := []struct {
		name    string
		match   map[string]string
		wantErr string // substring; "" means valid
	}{
		{"every key", map[string]string{"platform": "web", "room": "*", "chat_jid": "web:*", "sender": "web:user/*", "verb": "mention", "topic": "**"}, ""},
		{"verb glob", map[string]string{"verb": "m*"}, ""},
		{"platform glob", map[string]string{"platform": "tele*"}, ""},
		{"literal chat", map[string]string{"chat_jid": "slack:T1/channel/C42"}, ""},
		{"topic is free text", map[string]string{"topic": "Release (v2)?"}, ""},
		{"verb typo", map[string]string{"verb": "mentoin"}, `match key verb: glob "mentoin" matches neither message nor mention`},
		{"platform upper case", map[string]string{"platform": "Web"}, `match key platform: glob "Web" has 'W'; a platform is lowercase letters and digits`},
		{"chat without platform", map[string]string{"chat_jid": "lobby"}, `match key chat_jid: glob "lobby" is not a JID`},
		{"sender without platform", map[string]string{"sender": "ann"}, `match key sender: glob "ann" is not a JID`},
		{"room with a space", map[string]string{"room": "my room*"}, `match key room: glob "my room*" has ' ', which no JID has`},
		{"chat glob with bracket", map[string]string{"chat_jid": "web:[a]*"}, `match key chat_jid: glob "web:[a]*" has '[', which no JID has`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateNewMatch(c.match)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateNewMatch = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("ValidateNewMatch = %v, want error containing %q", err, c.wantErr)
			}
			if !errors.Is(err, ErrInvalidRoute) {
				t.Errorf("error %v does not wrap ErrInvalidRoute", err)
			}
			r := Route{ID: 1, Target: "main", Match: c.match}
			if err := r.ValidateNew(); err == nil || !strings.Contains(err.Error(), "route match: "+c.wantErr) {
				t.Errorf("ValidateNew = %v", err)
			}
			if _, err := New([]Route{r}); err != nil {
				t.Errorf("a stored route with this match no longer loads: %v", err)
			}
		})
	}
}

func TestRouteValidate(t *testing.T) {
	cases := []struct {
		name    string
		route   Route
		wantErr string // exact prefix of the message; "" means valid
	}{
		{"minimal", Route{Target: "main"}, ""},
		{"observe", Route{Target: "acme/eng", Mode: Observe, Match: map[string]string{"platform": "web"}}, ""},
		{"trigger", Route{Target: "main", Mode: Trigger}, ""},
		{"bad target", Route{Target: "Main"}, `route target "Main": invalid group folder "Main"`},
		{"empty target", Route{}, `route target "": invalid group folder: empty name`},
		{"bad mode", Route{Target: "main", Mode: "x"}, `route mode "x": want trigger or observe`},
		{"bad match", Route{Target: "main", Match: map[string]string{"foo": "x"}}, `route match: unknown match key "foo"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.route.Validate()
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
				t.Fatalf("Validate = %v, want error starting %q", err, c.wantErr)
			}
			if !errors.Is(err, ErrInvalidRoute) {
				t.Errorf("error %v does not wrap ErrInvalidRoute", err)
			}
		})
	}
	if err := (Route{Target: "A"}).Validate(); !errors.Is(err, groups.ErrInvalidFolder) {
		t.Errorf("bad target error %v does not wrap groups.ErrInvalidFolder", err)
	}
}

func TestNormalize(t *testing.T) {
	r := Route{Target: "main"}.Normalize()
	if r.Mode != Trigger || r.Match == nil || len(r.Match) != 0 {
		t.Errorf("Normalize = %+v, want mode trigger and an empty match", r)
	}
	r = Route{Target: "main", Mode: Observe, Match: map[string]string{"platform": "web"}}.Normalize()
	if r.Mode != Observe || r.Match["platform"] != "web" {
		t.Errorf("Normalize changed a set mode or match: %+v", r)
	}
}

func TestNewNamesRouteID(t *testing.T) {
	_, err := New([]Route{{ID: 1, Target: "main"}, {ID: 7, Target: "main", Mode: "loud"}})
	if err == nil || !strings.HasPrefix(err.Error(), `route id 7: route mode "loud"`) || !errors.Is(err, ErrInvalidRoute) {
		t.Fatalf("New = %v, want an ErrInvalidRoute naming route id 7", err)
	}
}
