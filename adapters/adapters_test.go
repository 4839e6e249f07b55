package adapters

import (
	"errors"
	"strings"
	"testing"
)

func TestParseJID(t *testing.T) {
	for _, tc := range []struct {
		name, in       string
		ok             bool
		platform, room string
	}{
		{"web room", "web:lobby", true, "web", "lobby"},
		{"telegram group", "telegram:group/1001234", true, "telegram", "group/1001234"},
		{"slack channel", "slack:T1/channel/C9", true, "slack", "T1/channel/C9"},
		{"discord dm", "discord:dm/42", true, "discord", "dm/42"},
		{"empty", "", false, "", ""},
		{"no colon", "lobby", false, "", ""},
		{"uppercase platform", "Web:lobby", false, "", ""},
		{"empty platform", ":lobby", false, "", ""},
		{"empty room", "web:", false, "", ""},
		{"url", "https://example.com", false, "", ""},
		{"space", "web:the lobby", false, "", ""},
		{"glob char", "web:lob*", false, "", ""},
		{"param separator", "web:a,b", false, "", ""},
		{"too long", "web:" + strings.Repeat("a", 600), false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := ParseJID(tc.in)
			if !tc.ok {
				if !errors.Is(err, ErrBadJID) {
					t.Fatalf("ParseJID(%q) = %q, %v; want ErrBadJID", tc.in, j, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseJID(%q): %v", tc.in, err)
			}
			if j.Platform() != tc.platform || j.Room() != tc.room {
				t.Errorf("ParseJID(%q): platform %q room %q; want %q %q", tc.in, j.Platform(), j.Room(), tc.platform, tc.room)
			}
		})
	}
}
