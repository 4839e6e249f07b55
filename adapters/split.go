package adapters

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// fenceClose is the room a fence closing a cut code block takes.
const fenceClose = "\n```"

// Split cuts Markdown text into ordered parts of at most max UTF-16 code
// units each (the measure of Limits.MaxText), preferring paragraph, then
// line, then word boundaries, and cutting inside a word only when nothing
// else fits. A fenced code block that has to be cut is closed at the end of
// its part and reopened (with its info string, cut short when it is long:
// see reopener) at the start of the next, so every part renders on its own.
// max <= 0, or text that fits, returns text alone. Whitespace at a cut is
// dropped; nothing else is.
func Split(text string, max int) []string {
	if max <= 0 || prefixFitting(text, max) == len(text) {
		return []string{text}
	}
	var parts []string
	prefix := "" // reopens a fence cut in the previous part
	for text != "" {
		if prefixFitting(text, max-UTF16Len(prefix)) == len(text) { // counts no further than max
			parts = append(parts, prefix+text)
			break
		}
		budget := max - UTF16Len(prefix)
		cut, skip := cutPoint(text, budget)
		if _, open := openFence(prefix + text[:cut]); open && budget > len(fenceClose) {
			// Room for the fence that closes this part.
			cut, skip = cutPoint(text, budget-len(fenceClose))
		}
		piece := strings.TrimRight(prefix+text[:cut], " \t\n")
		text = text[cut+skip:]
		prefix = ""
		if opener, open := openFence(piece); open {
			rest := strings.TrimLeft(text, "\n")
			if line, after, _ := strings.Cut(rest, "\n"); strings.TrimSpace(line) == opener[:3] {
				// The block ends right here: close it with its own fence.
				piece += "\n" + opener[:3]
				text = after
			} else {
				piece += fenceClose[:1] + opener[:3]
				prefix = reopener(opener, max) + "\n"
			}
		} else {
			text = strings.TrimLeft(text, "\n")
		}
		if strings.TrimSpace(piece) != "" {
			parts = append(parts, piece)
		}
		if strings.TrimSpace(text) == "" {
			break
		}
	}
	return parts
}

// cutPoint returns where to cut text so that text[:cut] fits budget UTF-16
// units, and how many separator bytes after the cut to drop.
func cutPoint(text string, budget int) (cut, skip int) {
	limit := prefixFitting(text, budget)
	if limit >= len(text) {
		return len(text), 0
	}
	head := text[:limit]
	// A boundary in the last two thirds of the budget makes even parts;
	// failing that, any boundary beats cutting a word.
	for _, minAt := range []int{limit / 3, 1} {
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(head, sep); i >= minAt {
				return i, len(sep)
			}
		}
	}
	if limit == 0 { // one character wider than the budget: take it anyway
		_, n := utf8.DecodeRuneInString(text)
		return n, 0
	}
	return limit, 0
}

// prefixFitting is the byte length of the longest rune-aligned prefix of s
// that is at most budget UTF-16 code units long.
func prefixFitting(s string, budget int) int {
	units := 0
	for i, r := range s {
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1
		}
		if units+n > budget {
			return i
		}
		units += n
	}
	return len(s)
}

// UTF16Len is the length of s in UTF-16 code units, the measure Telegram and
// Limits.MaxText use.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		if k := utf16.RuneLen(r); k > 0 {
			n += k
		} else {
			n++
		}
	}
	return n
}

// reopener is the line that reopens a cut code block in the next part: its
// opening line while that takes at most a quarter of a part, else the
// fence with only the info string's first word (the language), else the
// bare fence. An info string as long as a part would otherwise leave no
// room for code, and every part would carry one character.
func reopener(opener string, max int) string {
	if UTF16Len(opener)+1 <= max/4 {
		return opener
	}
	marker := opener[:3]
	if f := strings.Fields(opener[3:]); len(f) > 0 && UTF16Len(marker+f[0])+1 <= max/4 {
		return marker + f[0]
	}
	return marker
}

// openFence reports whether s ends inside a fenced code block, and that
// block's opening line (``` or ~~~ with its info string).
func openFence(s string) (opener string, open bool) {
	var marker string
	for line := range strings.SplitSeq(s, "\n") {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 {
			continue
		}
		switch {
		case marker == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			marker, opener = t[:3], strings.TrimRight(t, " ")
		case marker != "" && strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]+" ") == "":
			marker, opener = "", ""
		}
	}
	return opener, marker != ""
}

// SplitRendered is Split for a platform that counts the rendered part:
// measure gives a part's length as the platform counts it once rendered
// (Limits.Measure; nil means the source's length, as Split measures). A
// part whose rendering is over max (tables, nested lists and quotes can
// render longer than their source) is split again with a budget shrunk by
// the rendering's growth, until every part fits or a part cannot shrink.
// Like Split, it is deterministic: a retry resumes at the same part.
func SplitRendered(text string, max int, measure func(string) int) []string {
	parts := Split(text, max)
	if max <= 0 || measure == nil {
		return parts
	}
	var out []string
	for _, p := range parts {
		out = append(out, fitRendered(p, max, measure, 8)...)
	}
	return out
}

// fitRendered splits part until each piece's rendering fits max, at most
// depth times over.
func fitRendered(part string, max int, measure func(string) int, depth int) []string {
	n := measure(part)
	if n <= max || depth == 0 {
		return []string{part}
	}
	src := UTF16Len(part)
	budget := src * max / n * 9 / 10 // the growth, and a margin for where the cut falls
	if budget >= src {
		budget = src - 1
	}
	if budget < 1 {
		return []string{part}
	}
	var out []string
	for _, p := range Split(part, budget) {
		out = append(out, fitRendered(p, max, measure, depth-1)...)
	}
	return out
}
