package gateway

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/store"
)

// turnHeader describes a turn in the prompt's first line.
type turnHeader struct {
	Folder  groups.Folder
	Tier    int
	Chat    adapters.JID
	Topic   string
	Trigger store.Trigger
	Now     time.Time
	Files   map[fileKey]fetched // attachments downloaded into the folder
}

// buildPrompt renders the prompt of CONTRACT §8: the <turn/> header, earlier
// delivery failures, observed context, the task or delegated prompt, and the
// messages of the batch.
func buildPrompt(h turnHeader, b store.Batch) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `<turn folder="%s" tier="%d" chat="%s"`, esc(h.Folder), h.Tier, esc(h.Chat))
	if h.Topic != "" {
		fmt.Fprintf(&sb, ` topic="%s"`, esc(h.Topic))
	}
	fmt.Fprintf(&sb, ` trigger="%s" now="%s"/>`+"\n", esc(string(h.Trigger)), h.Now.UTC().Format(time.RFC3339))
	for _, n := range b.Notices {
		fmt.Fprintf(&sb, `<delivery_failed chat="%s" time="%s" error="%s">%s</delivery_failed>`+"\n",
			esc(n.ChatJID), msTime(n.Created), esc(n.Error), escText(n.Text))
	}
	for _, r := range b.Reactions {
		fmt.Fprintf(&sb, `<reaction chat="%s" message_id="%s" sender="%s" name="%s" emoji="%s" time="%s"`,
			esc(r.ChatJID), esc(r.MsgID), esc(r.Sender), esc(r.SenderName), esc(r.Emoji), msTime(r.Time))
		if r.Removed {
			sb.WriteString(` removed="true"`)
		}
		sb.WriteString("/>\n")
	}
	if len(b.Observed) > 0 {
		sb.WriteString("<observed>\n")
		for _, m := range b.Observed {
			writeMessage(&sb, m, h.Files)
		}
		sb.WriteString("</observed>\n")
	}
	for _, it := range b.Items {
		switch it.Trigger {
		case store.TriggerTask:
			fmt.Fprintf(&sb, `<task id="%d" run="%d">%s</task>`+"\n", it.TaskID, it.RunID, escText(it.Prompt))
		case store.TriggerDelegate, store.TriggerEscalate:
			fmt.Fprintf(&sb, `<%s from="%s">%s</%s>`+"\n", it.Trigger, esc(it.Origin), escText(it.Prompt), it.Trigger)
		}
	}
	if len(b.Messages) > 0 {
		sb.WriteString("<messages>\n")
		for _, m := range b.Messages {
			writeMessage(&sb, m, h.Files)
		}
		sb.WriteString("</messages>\n")
	}
	return sb.String()
}

func writeMessage(sb *strings.Builder, m store.Message, files map[fileKey]fetched) {
	fmt.Fprintf(sb, `<message seq="%d" id="%s" sender="%s" name="%s" time="%s" verb="%s"`,
		m.Seq, esc(m.ID), esc(m.Sender), esc(m.SenderName), msTime(m.Time), esc(m.Verb))
	if m.Topic != "" {
		fmt.Fprintf(sb, ` topic="%s"`, esc(m.Topic))
	}
	if m.ReplyTo != "" {
		fmt.Fprintf(sb, ` reply_to="%s"`, esc(m.ReplyTo))
	}
	if m.FromBot {
		sb.WriteString(` from_bot="true"`)
	}
	if m.OtherBot {
		sb.WriteString(` other_bot="true"`)
	}
	if m.Deleted {
		sb.WriteString(` deleted="true"`)
	}
	if !m.Edited.IsZero() {
		fmt.Fprintf(sb, ` edited="%s"`, msTime(m.Edited))
	}
	sb.WriteString(">")
	sb.WriteString(escText(m.Text))
	for i, a := range m.Attachments {
		f := files[fileKey{m.Seq, i}]
		if f.path != "" {
			size := a.Size
			if size <= 0 {
				size = f.size // the platform stated none: what the folder holds
			}
			fmt.Fprintf(sb, `<attachment path="%s" name="%s" mime="%s" size="%d"/>`, esc(f.path), esc(a.Name), esc(a.MIME), size)
		} else {
			if f.err == "" {
				f.err = "not fetched"
			}
			fmt.Fprintf(sb, `<attachment name="%s" mime="%s" size="%d" error="%s"/>`, esc(a.Name), esc(a.MIME), a.Size, esc(f.err))
		}
	}
	sb.WriteString("</message>\n")
}

func msTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	// In an attribute, a line break or tab would be read back as a space
	// (XML's attribute-value normalization): written as references, a name
	// or id keeps its characters.
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;",
		"\n", "&#10;", "\r", "&#13;", "\t", "&#9;")
)

// esc escapes an attribute value for the prompt's XML markup, so a value
// cannot break out of its quotes or forge a <turn>.
func esc[S ~string](s S) string { return attrEscaper.Replace(xmlChars(string(s))) }

// escText escapes element content (a message's text, a task's prompt): it
// keeps its line breaks and cannot close its element.
func escText(s string) string { return textEscaper.Replace(xmlChars(s)) }

// xmlChars replaces what XML 1.0 does not allow in a document (C0
// controls other than tab and line breaks, U+FFFE, U+FFFF, bytes that are
// not UTF-8: a NUL or an escape sequence in a chat message) with U+FFFD, so
// the prompt stays a document an XML parser reads.
func xmlChars(s string) string {
	ok := true
	for i, r := range s {
		if !xmlChar(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if !xmlChar(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

func xmlChar(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r':
		return true
	case r < 0x20, r == 0xFFFE, r == 0xFFFF:
		return false
	}
	return true
}
