package agent

import (
	"regexp"
	"strings"
	"unicode"
)

// stderrLines is how many lines of stderr a failure quotes: a runtime's
// error often takes a few (the source line, the error, its cause).
const stderrLines = 5

// noiseLine matches stderr lines that say nothing about why an agent
// failed: stack frames ("    at main (/app/x.js:3:9)", Java's and .NET's
// alike) and the version Node prints last ("Node.js v22.11.0").
var noiseLine = regexp.MustCompile(`^(\s+at \S.*|Node\.js v[0-9.]+)$`)

// stderrDetail is what a failure quotes of the agent's stderr: its last
// few meaningful lines (not blank, not a bare marker such as "^", not a
// stack frame or the Node.js trailer), each trimmed, joined by ⏎, as many
// whole lines as fit in detailMax bytes (at least the last, clipped), with
// what may be a secret redacted (Redact, and the values of the agent.env
// variables in secrets). "" when stderr has no such line.
func stderrDetail(b []byte, secrets []string) string {
	var lines []string
	all := strings.Split(strings.ToValidUTF8(string(b), "\uFFFD"), "\n")
	for i := len(all) - 1; i >= 0 && len(lines) < stderrLines; i-- {
		l := strings.TrimRight(all[i], " \t\r")
		if !strings.ContainsFunc(l, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) || noiseLine.MatchString(l) {
			continue
		}
		lines = append(lines, Redact(strings.TrimSpace(l), secrets, "…"))
	}
	if len(lines) == 0 {
		return ""
	}
	const sep = " ⏎ "
	s := clip(lines[0])
	for _, l := range lines[1:] {
		if len(l)+len(sep)+len(s) > detailMax {
			break
		}
		s = l + sep + s
	}
	return s
}
