package gateway

import (
	"fmt"
	"strings"
	"time"

	"switchboard/store"
)

// turnHeader describes a turn in the prompt's first line.
type turnHeader struct {
	Folder  string
	Tier    int
	Chat    string
	Topic   string
	Trigger string
	Now     time.Time
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
	fmt.Fprintf(&sb, ` trigger="%s" now="%s"/>`+"\n", esc(h.Trigger), h.Now.UTC().Format(time.RFC3339))
	for _, n := range b.Notices {
		fmt.Fprintf(&sb, `<delivery_failed chat="%s" time="%s" error="%s">%s</delivery_failed>`+"\n",
			esc(n.ChatJID), msTime(n.Created), esc(n.Error), esc(n.Text))
	}
	if len(b.Observed) > 0 {
		sb.WriteString("<observed>\n")
		for _, m := range b.Observed {
			writeMessage(&sb, m)
		}
		sb.WriteString("</observed>\n")
	}
	for _, it := range b.Items {
		switch it.Trigger {
		case TriggerTask:
			fmt.Fprintf(&sb, `<task id="%d" run="%d">%s</task>`+"\n", it.TaskID, it.RunID, esc(it.Prompt))
		case TriggerDelegate, TriggerEscalate:
			fmt.Fprintf(&sb, `<%s from="%s">%s</%s>`+"\n", it.Trigger, esc(it.Origin), esc(it.Prompt), it.Trigger)
		}
	}
	if len(b.Messages) > 0 {
		sb.WriteString("<messages>\n")
		for _, m := range b.Messages {
			writeMessage(&sb, m)
		}
		sb.WriteString("</messages>\n")
	}
	return sb.String()
}

func writeMessage(sb *strings.Builder, m store.Message) {
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
	sb.WriteString(">")
	sb.WriteString(esc(m.Text))
	for _, a := range m.Attachments {
		fmt.Fprintf(sb, `<attachment name="%s" mime="%s" size="%d"/>`, esc(a.Name), esc(a.MIME), a.Size)
	}
	sb.WriteString("</message>\n")
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// esc escapes text for the prompt's XML-like markup, so a message cannot
// close its element or forge a <turn>.
func esc(s string) string { return escaper.Replace(s) }
