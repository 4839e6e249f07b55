package adapters

import (
	"strings"
	"testing"
)

// A live text settles the parts a final would cut, never the last one, and
// never a part whose cut the next line can still move.
func TestLiveParts(t *testing.T) {
	lim := Limits{MaxText: 40}
	line := "a line of some words\n" // 21 units
	for _, tc := range []struct {
		name    string
		text    string
		settled int
	}{
		{"fits", "short", 0},
		{"no limit", strings.Repeat(line, 9), 0},
		{"one long line", strings.Repeat("word ", 30), 0},
		{"six parts", strings.TrimSpace(strings.Repeat(line, 6)), 4},
		{"a fence being closed", "```\n" + strings.Repeat("code line here\n", 3) + "``", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lim
			if tc.name == "no limit" {
				l = Limits{}
			}
			parts, settled := LiveParts(tc.text, l)
			if settled != tc.settled {
				t.Errorf("settled %d of %q; want %d", settled, parts, tc.settled)
			}
			final := SplitRendered(tc.text+"`\nafter the block", l.MaxText, l.Measure) // the fence, if any, completed
			for i := range settled {
				if parts[i] != final[i] {
					t.Errorf("settled part %d %q; the final's is %q", i, parts[i], final[i])
				}
			}
		})
	}
	// Whatever follows, the settled parts are the final's.
	text := strings.TrimSpace(strings.Repeat(line, 6))
	parts, settled := LiveParts(text, lim)
	final := SplitRendered(text+" and more\n```\nx\n```", lim.MaxText, nil)
	for i := range settled {
		if parts[i] != final[i] {
			t.Errorf("settled part %d %q; after more text the final's is %q", i, parts[i], final[i])
		}
	}
}
