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
		{"one long line, short past the limit", strings.TrimSpace(strings.Repeat("word ", 25)), 0},
		{"one long line", strings.TrimSpace(strings.Repeat("word ", 60)), 4},
		{"one long line after lines", strings.TrimSpace(line + strings.Repeat("word ", 60)), 5},
		{"one long line opening a fence", "```" + strings.Repeat("word ", 60), 0},
		{"one long line inside a fence", "```\n" + strings.Repeat("word ", 60), 0},
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

// One long line with no newline settles each part once the text has run
// LiveSettleTail runes past its cut, and whatever follows (more words, a
// newline, a code block), the settled parts are the final's.
func TestLivePartsOneLongLine(t *testing.T) {
	lim := Limits{MaxText: 40}
	words := strings.Fields(strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa ", 12))
	for n := 1; n <= len(words); n++ {
		text := strings.Join(words[:n], " ")
		parts, settled := LiveParts(text, lim)
		if len(text) > 40+LiveSettleTail+20 && settled == 0 {
			t.Fatalf("%d runes on one line settle no part; want the first settled", len(text))
		}
		for _, more := range []string{" lambda mu", "lambdamu", "\n\nnext paragraph", "\n```\ncode\n```", strings.Repeat(" nu", 40)} {
			final := SplitRendered(text+more, lim.MaxText, nil)
			for i := range settled {
				if parts[i] != final[i] {
					t.Fatalf("%d words: settled part %d %q; after %q the final's is %q", n, i, parts[i], more, final[i])
				}
			}
		}
	}
}
