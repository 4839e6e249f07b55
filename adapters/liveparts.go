package adapters

import (
	"strings"
	"unicode/utf8"
)

// LiveSettleTail is how far (in runes) a live text must run past a cut in
// its last line before that cut counts as settled: a cut inside one long
// line depends only on the text before it once the text has passed the
// limit, and the margin also covers a platform measure (Limits.Measure)
// that re-splits a part by its rendering.
const LiveSettleTail = 100

// LiveParts splits a live reply's text so far as a final of that text
// would be split (SplitRendered at lim.MaxText, lim.Measure) and says how
// many of its parts are settled: more text can no longer change them, so
// a live reply may finish each as a message of its own and go on in a new
// one (CONTRACT §15: a live reply over the length limit continues in a new
// message). A part is settled once the text without its last line, which
// may be incomplete (a code fence being typed), is cut the same way up to
// it; or, for a cut inside the last line (one long line with no newline),
// once the text without its last LiveSettleTail runes is, and that line is
// neither inside a code fence nor the start of one. The last part is never
// settled. text is expected trimmed, as the final will be. With no limit,
// or text that fits, it is one part and none is settled.
func LiveParts(text string, lim Limits) (parts []string, settled int) {
	if lim.MaxText <= 0 || text == "" {
		return []string{text}, 0
	}
	parts = SplitRendered(text, lim.MaxText, lim.Measure)
	if len(parts) < 2 {
		return parts, 0
	}
	i := strings.LastIndexByte(text, '\n')
	if i >= 0 {
		settled = settledAs(parts, SplitRendered(strings.TrimSpace(text[:i]), lim.MaxText, lim.Measure))
	}
	if settled < len(parts)-1 && lastLinePlain(text, i) {
		if n := tailStart(text, LiveSettleTail); n > i+1 {
			settled = max(settled, settledAs(parts, SplitRendered(strings.TrimSpace(text[:n]), lim.MaxText, lim.Measure)))
		}
	}
	return parts, settled
}

// settledAs counts the leading parts that a shorter text (before) cuts the
// same way and not as its last part, never parts' last.
func settledAs(parts, before []string) int {
	n := 0
	for n < len(parts)-1 && n < len(before)-1 && parts[n] == before[n] {
		n++
	}
	return n
}

// lastLinePlain reports whether the line of text after byte nl (its last
// newline, -1 for none) is outside any code fence and opens none: a cut
// there is a plain word cut that more text cannot move.
func lastLinePlain(text string, nl int) bool {
	if nl >= 0 {
		if _, open := openFence(text[:nl]); open {
			return false
		}
	}
	line := strings.TrimLeft(text[nl+1:], " ")
	return !strings.HasPrefix(line, "`") && !strings.HasPrefix(line, "~") // "``" may be a fence being typed
}

// tailStart is the byte offset of the last n runes of text (0 when it has
// fewer).
func tailStart(text string, n int) int {
	i := len(text)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(text[:i])
		i -= size
	}
	return i
}
