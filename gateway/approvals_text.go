package gateway

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/store"
)

// What an approval request shows, and the /approve and /deny commands.

const (
	maxArgValue = 300  // bytes of one argument value shown
	maxArgsText = 1500 // bytes of all arguments shown
)

// secretKey matches argument names whose values are secrets.
var secretKey = regexp.MustCompile(`(?i)(token|secret|passw|pwd|api_?key|apikey|private_?key|credential|cookie|authorization|auth|bearer|session_?id)`)

// secretValue matches values that look like credentials wherever they are.
var secretValue = regexp.MustCompile(`(?i)\b(sk-[a-z0-9_-]{8,}|xox[abpr]-[a-z0-9-]{8,}|xapp-[a-z0-9-]{8,}|gh[pousr]_[a-z0-9]{16,}|github_pat_[a-z0-9_]{16,}|AKIA[0-9A-Z]{12,}|eyJ[a-z0-9_-]{10,}\.[a-z0-9_-]{10,}\.[a-z0-9_-]{5,}|bearer\s+\S{8,})`)

// envAssignment matches NAME=value of an environment variable in a command
// line; the value is shown redacted.
var envAssignment = regexp.MustCompile(`\b([A-Z][A-Z0-9_]*)=("[^"]*"|'[^']*'|\S+)`)

const redacted = "[redacted]"

// renderArgs shows a call's arguments to approvers: one line per argument
// (nested ones as a.b), secret-looking names and values and environment
// values redacted, long values cut.
func renderArgs(args map[string]any) string {
	var lines []string
	flattenArgs("", args, 0, &lines)
	text := strings.Join(lines, "\n")
	if len(text) > maxArgsText {
		text = cut(text, maxArgsText)
	}
	if text == "" {
		return "(no arguments)"
	}
	return text
}

func flattenArgs(prefix string, v any, depth int, lines *[]string) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			switch {
			case secretKey.MatchString(k):
				*lines = append(*lines, name+": "+redacted)
			case strings.EqualFold(k, "env") || strings.EqualFold(k, "environment"):
				*lines = append(*lines, name+": "+envNames(t[k]))
			case depth >= 3:
				*lines = append(*lines, name+": "+showValue(t[k]))
			default:
				flattenArgs(name, t[k], depth+1, lines)
			}
		}
	default:
		*lines = append(*lines, prefix+": "+showValue(v))
	}
}

// envNames shows an environment's variable names, never their values.
func envNames(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return redacted
	}
	var names []string
	for k := range m {
		names = append(names, k+"="+redacted)
	}
	slices.Sort(names)
	return cut(strings.Join(names, " "), maxArgValue)
}

// showValue is one value as shown: strings as they are, the rest as JSON,
// secrets redacted, cut to maxArgValue.
func showValue(v any) string {
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return "(unprintable)"
		}
		s = string(b)
	}
	s = secretValue.ReplaceAllString(s, redacted)
	s = envAssignment.ReplaceAllString(s, "$1="+redacted)
	s = agent.Redact(s, nil, redacted) // as the call's progress note is
	return cut(s, maxArgValue)
}

// cut shortens s to at most n bytes (on a rune boundary), saying how much
// was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… (%d more bytes)", len(s)-i)
}

// requestText is a request as posted (Markdown): the arguments in a code
// block, where the platform's renderer interprets nothing.
func requestText(a store.Approval) string {
	args := strings.ReplaceAll(a.Args, "```", "'''")
	return fmt.Sprintf("**Approval needed** (request `%s`)\nGroup `%s` wants to call `%s`:\n```\n%s\n```",
		a.ID, markdownSafe(string(a.Folder)), markdownSafe(a.Tool), args)
}

// markdownSafe keeps a name from breaking out of inline code.
func markdownSafe(s string) string {
	s = strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(s)
	return cut(s, 200)
}

// approvalCommand is an /approve or /deny message.
type approvalCommand struct {
	id     string
	choice string // allow, session or deny
}

// approvalCommandRE matches the whole message: /approve ID [session] or
// /deny ID, the command optionally addressed to the bot (/approve@bot).
var approvalCommandRE = regexp.MustCompile(`^/(approve|deny)(?:@\S+)?\s+([a-z0-9]{4,16})(?:\s+(session|once))?\s*$`)

// parseApprovalCommand recognizes an /approve or /deny message, also after
// the bot's mention in a message that mentions it ("@bot /approve ID"):
// Slack's clients take a message that starts with "/" for a slash command.
func parseApprovalCommand(text string, verb adapters.Verb, bot botMention) (approvalCommand, bool) {
	m := approvalCommandRE.FindStringSubmatch(withoutMention(text, verb, bot))
	if m == nil {
		return approvalCommand{}, false
	}
	c := approvalCommand{id: m[2], choice: "allow"}
	switch {
	case m[1] == "deny":
		if m[3] != "" {
			return approvalCommand{}, false
		}
		c.choice = "deny"
	case m[3] == "session":
		c.choice = "session"
	}
	return c, true
}

// withoutMention is text trimmed, without its first word when that is the
// bot's mention (botMention) and the message mentions the bot (verb).
func withoutMention(text string, verb adapters.Verb, bot botMention) string {
	text = strings.TrimSpace(text)
	if verb != adapters.VerbMention {
		return text
	}
	i := strings.IndexFunc(text, unicode.IsSpace)
	if i < 0 || !bot.is(text[:i]) {
		return text
	}
	return strings.TrimSpace(text[i:])
}
