package agent

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// maxSummary is the length of a tool call's summary, in characters.
const maxSummary = 80

// summaryKeys are the input fields that say best what a call does, in
// order of preference: Claude Code's Bash command, Read/Write/Edit
// file_path, Grep/Glob pattern, WebFetch url, WebSearch query, Task
// description; Codex's command; and what MCP tools commonly take.
var summaryKeys = []string{"command", "cmd", "file_path", "notebook_path", "path", "pattern", "url", "query", "description", "prompt", "name"}

// secretName is a field or flag name whose value is a secret.
var secretName = regexp.MustCompile(`(?i)pass|token|secret|key|auth|cred|sig|cookie|session`)

// summarize is the one-line summary of a tool call's input (a JSON object)
// shown while it runs: the field that says best what it does, with every
// value that may be a secret replaced by "…" (redact), on one line, cut
// to maxSummary characters. secrets are values that must never appear
// (the agent's environment variables).
func summarize(input []byte, secrets []string) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return ""
	}
	text := func(k string) string {
		var s string
		if json.Unmarshal(fields[k], &s) == nil {
			return s
		}
		var argv []string // Codex and some MCP tools give a command as argv
		if json.Unmarshal(fields[k], &argv) == nil {
			return strings.Join(argv, " ")
		}
		return ""
	}
	s := ""
	for _, k := range summaryKeys {
		if s = text(k); s != "" {
			break
		}
	}
	if s == "" {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !secretName.MatchString(k) {
				if s = text(k); s != "" {
					break
				}
			}
		}
	}
	return summaryText(s, secrets)
}

// summaryText is s as a summary: redacted, on one line, cut.
func summaryText(s string, secrets []string) string {
	return oneLine(redact(s, secrets), maxSummary)
}

var redactions = []struct {
	re   *regexp.Regexp
	with string
}{
	// user:password@ in URLs.
	{regexp.MustCompile(`(://)[^/@\s]+@`), "$1…@"},
	// Bearer xyz, token xyz.
	{regexp.MustCompile(`(?i)\b(bearer|basic|token)(\s+)[^\s'"]+`), "$1$2…"},
	// --password x, --api-key=x.
	{regexp.MustCompile(`(?i)(--?[a-z0-9_-]*(?:pass|token|secret|key|auth|cred)[a-z0-9_-]*)(=|\s+)('[^']*'|"[^"]*"|\S+)`), "$1$2…"},
	// curl -u user:password, --user=user:password (a value without ":"
	// is a name alone, as in sort -u or ps -u root).
	{regexp.MustCompile(`(^|\s)(-u|--user)(=|\s*)('[^'\s]*:[^']*'|"[^"\s]*:[^"]*"|[^\s'"]*:[^\s'"]*)`), "$1$2$3…"},
	// Headers such as X-Api-Key: x, Authorization: Bearer x.
	{regexp.MustCompile(`(?i)\b([a-z0-9-]*(?:pass|token|secret|key|auth|cookie)[a-z0-9-]*:)(\s*)((?:bearer|basic)\s+)?[^\s'"]+`), "$1$2$3…"},
	// Environment assignments (API_KEY=x cmd, export TOKEN=x).
	{regexp.MustCompile(`\b([A-Z_][A-Z0-9_]*)=('[^']*'|"[^"]*"|[^\s;&|]+)`), "$1=…"},
	// Query parameters and settings named like secrets (?token=x, password=x).
	{regexp.MustCompile(`(?i)\b([a-z0-9_]*(?:pass|token|secret|key|auth|sig|cred)[a-z0-9_]*)=([^\s&;'"]+)`), "$1=…"},
	// Well-known token shapes: API keys, GitHub, Slack and AWS tokens, JWTs.
	{regexp.MustCompile(`\b(sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|xox[abposr]-[A-Za-z0-9-]{8,}|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9._-]+)`), "…"},
}

// opaque is a run of token characters long enough to be a key.
var opaque = regexp.MustCompile(`[A-Za-z0-9+_=-]{32,}`)

// redact replaces what may be a secret in s with "…" (Redact).
func redact(s string, secrets []string) string { return Redact(s, secrets, "…") }

// Redact replaces what may be a secret in s with mark: the values in
// secrets, credentials in URLs, headers, flags and assignments, known
// token shapes, and long runs of letters and digits mixed (keys, hashes).
// It is the one redactor of tool inputs shown in a chat: a tool call's
// progress note and its approval request.
func Redact(s string, secrets []string, mark string) string {
	for _, v := range secrets {
		if len(v) >= 6 {
			s = strings.ReplaceAll(s, v, mark)
		}
	}
	with := strings.ReplaceAll(mark, "$", "$$")
	for _, r := range redactions {
		s = r.re.ReplaceAllString(s, strings.ReplaceAll(r.with, "…", with))
	}
	return opaque.ReplaceAllStringFunc(s, func(run string) string {
		if strings.ContainsFunc(run, unicode.IsDigit) && strings.ContainsFunc(run, unicode.IsLetter) {
			return mark
		}
		return run
	})
}

// oneLine is s with its whitespace runs (newlines too) made one space, cut
// to n characters ("…" marking the cut).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if r := []rune(s); len(r) > n {
		if n <= 0 {
			return ""
		}
		return string(r[:n-1]) + "…"
	}
	return s
}

// envSecrets are the values of the gateway's environment variables that a
// turn passes on (Spec.Env names them: API keys, tokens): a tool call's
// summary never shows them.
func envSecrets(names []string) []string {
	var vals []string
	for _, n := range names {
		if v := os.Getenv(n); len(v) >= 6 {
			vals = append(vals, v)
		}
	}
	return vals
}
