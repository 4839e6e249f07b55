package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Partial turns a prefix of a Markdown text, cut anywhere while it streams,
// into Markdown that renders as what the prefix will become rather than as
// raw markup: an open code fence is closed; in the last paragraph an open
// code span, **, *, __, _ or ~~ is closed (innermost first), a delimiter
// the cut left dangling at the end is dropped, and a link whose URL is
// still arriving shows its label; a line that is the start of a fence (one
// or two backticks or tildes) and a cut UTF-8 sequence at the end are
// dropped. A complete text comes back unchanged. Render the result like any
// other Markdown: live replies call it at every update.
func Partial(src string) string {
	src = trimCutRune(src)
	body, closer, tail := fences(src)
	if closer != "" {
		return body + closer
	}
	return body[:tail] + closeInline(body[tail:])
}

// trimCutRune drops an incomplete UTF-8 sequence at the end of s.
func trimCutRune(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}

// fences scans s for fenced code blocks. When one is open at the end it
// returns s (without a last line that is a closing fence still arriving)
// and the fence that closes it. Otherwise closer is "" and tail is where the
// last paragraph starts: after the last blank line or closing fence.
func fences(s string) (body, closer string, tail int) {
	var open string // the open fence's run of ` or ~; "" outside a block
	start := 0
lines:
	for start < len(s) {
		end := strings.IndexByte(s[start:], '\n')
		last := end < 0
		if last {
			end = len(s)
		} else {
			end += start
		}
		line := s[start:end]
		run, rest := fenceRun(line)
		switch {
		case last && run != "" && len(run) < 3 && strings.TrimSpace(rest) == "" &&
			(open == "" || run[0] == open[0]):
			// One or two ` or ~ alone: a fence still arriving.
			s = s[:start]
			break lines
		case open == "" && len(run) >= 3 && !(run[0] == '`' && strings.Contains(rest, "`")):
			open = run
		case open != "" && len(run) >= len(open) && run[0] == open[0] && strings.TrimSpace(rest) == "":
			open, tail = "", end+1
		case open == "" && strings.TrimSpace(line) == "":
			tail = end + 1
		}
		start = end + 1
	}
	if open != "" {
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return s, open, 0
	}
	return s, "", min(tail, len(s))
}

// fenceRun splits a line into its leading run of ` or ~ (after at most
// three spaces of indent) and the rest; run is "" when it starts otherwise.
func fenceRun(line string) (run, rest string) {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 || trimmed == "" || (trimmed[0] != '`' && trimmed[0] != '~') {
		return "", line
	}
	n := len(trimmed) - len(strings.TrimLeft(trimmed, trimmed[:1]))
	return trimmed[:n], trimmed[n:]
}

// closeInline closes what is open at the end of one paragraph p.
func closeInline(p string) string {
	p = linkLabel(p)
	var stack []string // open delimiters, innermost last
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '\\':
			i += 2
			continue
		case '`':
			n := runLen(p[i:], c)
			if j := closingTicks(p[i+n:], n); j >= 0 {
				i += n + j + n
				continue
			}
			if i+n == len(p) {
				return closeStack(p[:i], stack) // a dangling run: nothing in the span yet
			}
			return closeStack(p+p[i:i+n], stack)
		case '*', '_', '~':
			n := runLen(p[i:], c)
			delim := p[i : i+min(n, 3)]
			prev, _ := utf8.DecodeLastRuneInString(p[:i])
			next, _ := utf8.DecodeRuneInString(p[i+n:])
			atEnd := i+n == len(p)
			intraword := c == '_' && isWordRune(prev) && isWordRune(next)
			switch {
			case (c == '~' && n != 2 && !atEnd) || intraword:
			case len(stack) > 0 && stack[len(stack)-1] == delim && i > 0 && !unicode.IsSpace(prev):
				stack = stack[:len(stack)-1]
			case atEnd:
				return closeStack(p[:i], stack)
			case !unicode.IsSpace(next) && (c != '~' || n == 2):
				stack = append(stack, delim)
			}
			i += n
			continue
		}
		i++
	}
	return closeStack(p, stack)
}

// closeStack appends the closers of stack, innermost first; a closer after
// whitespace would not close, so trailing whitespace goes first.
func closeStack(p string, stack []string) string {
	if len(stack) == 0 {
		return p
	}
	p = strings.TrimRightFunc(p, unicode.IsSpace)
	for i := len(stack) - 1; i >= 0; i-- {
		p += stack[i]
	}
	return p
}

// linkLabel shows a link whose destination is still arriving,
// "[label](https://exa", as its label.
func linkLabel(p string) string {
	k := strings.LastIndex(p, "](")
	if k < 0 || strings.IndexByte(p[k:], ')') >= 0 {
		return p
	}
	lb := strings.LastIndexByte(p[:k], '[')
	if lb < 0 {
		return p
	}
	return p[:lb] + p[lb+1:k]
}

func runLen(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// closingTicks finds a run of exactly n backticks in s, or -1.
func closingTicks(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := runLen(s[i:], '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
