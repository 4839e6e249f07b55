package adapters

import "strings"

// LiveParts splits a live reply's text so far as a final of that text
// would be split (SplitRendered at lim.MaxText, lim.Measure) and says how
// many of its parts are settled: more text can no longer change them, so
// a live reply may finish each as a message of its own and go on in a new
// one (CONTRACT §15: a live reply over the length limit continues in a new
// message). Every part but the last is settled once the text without its
// last line, which may be incomplete (a code fence being typed), is cut
// the same way up to it. text is expected trimmed, as the final will be.
// With no limit, or text that fits, it is one part and none is settled.
func LiveParts(text string, lim Limits) (parts []string, settled int) {
	if lim.MaxText <= 0 || text == "" {
		return []string{text}, 0
	}
	parts = SplitRendered(text, lim.MaxText, lim.Measure)
	if len(parts) < 2 {
		return parts, 0
	}
	i := strings.LastIndexByte(text, '\n')
	if i < 0 {
		return parts, 0 // one line so far: its cuts may still move
	}
	before := SplitRendered(strings.TrimSpace(text[:i]), lim.MaxText, lim.Measure)
	for settled < len(parts)-1 && settled < len(before)-1 && parts[settled] == before[settled] {
		settled++
	}
	return parts, settled
}
