// Package markdown renders the Markdown that agents write into each chat
// platform's own format. It parses with goldmark (CommonMark plus GitHub's
// tables, strikethrough, autolinks and task lists) and renders from the AST
// through a Style: one walker, a small table of markup per platform. There
// are no regex converters here. Every Style's output keeps all of the text
// the agent wrote; what a platform cannot show (tables, headings, images)
// degrades to readable text.
//
// The package is a leaf beside adapters: platform adapters import it, and
// the gateway never renders.
package markdown

import (
	"bytes"
	"html"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Style is the markup of one platform. Zero fields render as plain text.
type Style struct {
	// Escape escapes literal text (not code) for the platform.
	Escape func(string) string
	// EscapeCode escapes the text of code spans and blocks; nil: Escape.
	EscapeCode func(string) string
	// Bold, Italic, Strike and Code wrap inline spans: {open, close}.
	Bold, Italic, Strike, Code [2]string
	// Pre renders a code block from its info string and escaped code.
	Pre func(lang, code string) string
	// Link renders a link from its rendered label and raw URL.
	Link func(label, url string) string
	// Heading renders a heading's rendered text.
	Heading func(text string) string
	// Quote renders a block quote's rendered content.
	Quote func(content string) string
	// KeepEscaped lists the ASCII punctuation whose backslash escape in
	// the agent's text stays as written; every other escape shows as the
	// character alone.
	KeepEscaped string
}

var parser = goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()

// Render parses src as Markdown and renders it in style st.
func Render(src string, st Style) string {
	source := []byte(src)
	doc := parser.Parse(text.NewReader(source))
	r := renderer{src: source, st: st}
	r.blocks(doc, "")
	return strings.TrimRight(r.out.String(), "\n")
}

type renderer struct {
	src []byte
	st  Style
	out bytes.Buffer
}

func (r *renderer) esc(s string) string {
	if r.st.Escape == nil {
		return s
	}
	return r.st.Escape(s)
}

func (r *renderer) escCode(s string) string {
	if r.st.EscapeCode != nil {
		return r.st.EscapeCode(s)
	}
	return r.esc(s)
}

// blocks renders the block children of n, separated by blank lines, each
// line after the first prefixed by indent.
func (r *renderer) blocks(n ast.Node, indent string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c != n.FirstChild() {
			r.out.WriteString("\n")
			if !tightItem(c) {
				r.out.WriteString(indent + "\n")
			}
			r.out.WriteString(indent)
		}
		r.block(c, indent)
	}
}

// tightItem: a block in a tight list item follows its sibling on the next line.
func tightItem(n ast.Node) bool {
	if li, ok := n.Parent().(*ast.ListItem); ok {
		if l, ok := li.Parent().(*ast.List); ok {
			return l.IsTight
		}
	}
	if _, ok := n.(*ast.ListItem); ok {
		return n.Parent().(*ast.List).IsTight
	}
	return false
}

func (r *renderer) block(n ast.Node, indent string) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.out.WriteString(r.inlines(n))
	case *ast.Heading:
		s := r.inlines(n)
		if r.st.Heading != nil {
			s = r.st.Heading(s)
		}
		r.out.WriteString(s)
	case *ast.ThematicBreak:
		r.out.WriteString("———")
	case *ast.FencedCodeBlock:
		var lang string
		if n.Info != nil {
			lang = strings.Fields(string(n.Info.Segment.Value(r.src)) + " ")[0]
		}
		r.code(lang, lines(n, r.src), indent)
	case *ast.CodeBlock:
		r.code("", lines(n, r.src), indent)
	case *ast.HTMLBlock:
		s := lines(n, r.src)
		if n.HasClosure() {
			s += string(n.ClosureLine.Value(r.src))
		}
		r.out.WriteString(r.esc(strings.TrimRight(s, "\n")))
	case *ast.Blockquote:
		sub := renderer{src: r.src, st: r.st}
		sub.blocks(n, "")
		content := strings.TrimRight(sub.out.String(), "\n")
		if r.st.Quote != nil {
			content = r.st.Quote(content)
		} else {
			content = "> " + strings.ReplaceAll(content, "\n", "\n> ")
		}
		r.out.WriteString(strings.ReplaceAll(content, "\n", "\n"+indent))
	case *ast.List:
		r.list(n, indent)
	case *east.Table:
		r.table(n, indent)
	default:
		r.blocks(n, indent)
	}
}

func (r *renderer) code(lang, code, indent string) {
	code = strings.TrimRight(code, "\n")
	var s string
	if r.st.Pre != nil {
		s = r.st.Pre(lang, r.escCode(code))
	} else {
		s = r.escCode(code) // a style without code blocks still escapes their text (SlackPlain)
	}
	r.out.WriteString(strings.ReplaceAll(s, "\n", "\n"+indent))
}

func (r *renderer) list(l *ast.List, indent string) {
	num := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		if item != l.FirstChild() {
			r.out.WriteString("\n")
			if !l.IsTight {
				r.out.WriteString(indent + "\n")
			}
			r.out.WriteString(indent)
		}
		marker := "• "
		if l.IsOrdered() {
			marker = strconv.Itoa(num) + ". "
			num++
		}
		r.out.WriteString(marker)
		r.blocks(item, indent+strings.Repeat(" ", len([]rune(marker))))
	}
}

// table renders a GFM table as lines of cells joined by " | ", the header
// in bold: no chat platform renders tables.
func (r *renderer) table(t *east.Table, indent string) {
	first := true
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		if !first {
			r.out.WriteString("\n" + indent)
		}
		first = false
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			s := r.inlines(c)
			if _, head := row.(*east.TableHeader); head && s != "" {
				s = r.st.Bold[0] + s + r.st.Bold[1]
			}
			cells = append(cells, s)
		}
		r.out.WriteString(strings.Join(cells, " | "))
	}
}

// inlines renders the inline children of n.
func (r *renderer) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(&b, c)
	}
	return b.String()
}

func (r *renderer) inline(b *strings.Builder, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		b.WriteString(r.esc(textValue(n.Segment.Value(r.src), r.st.KeepEscaped)))
		if n.HardLineBreak() || n.SoftLineBreak() {
			b.WriteString("\n")
		}
	case *ast.String:
		if n.IsCode() {
			b.WriteString(r.escCode(string(n.Value)))
		} else {
			b.WriteString(r.esc(string(n.Value)))
		}
	case *ast.CodeSpan:
		var code strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				code.Write(t.Segment.Value(r.src))
			case *ast.String:
				code.Write(t.Value)
			}
		}
		b.WriteString(r.st.Code[0] + r.escCode(code.String()) + r.st.Code[1])
	case *ast.Emphasis:
		w := r.st.Italic
		if n.Level >= 2 {
			w = r.st.Bold
		}
		b.WriteString(w[0] + r.inlines(n) + w[1])
	case *east.Strikethrough:
		b.WriteString(r.st.Strike[0] + r.inlines(n) + r.st.Strike[1])
	case *ast.Link:
		r.link(b, r.inlines(n), textValue(n.Destination, ""))
	case *ast.Image:
		r.link(b, r.inlines(n), textValue(n.Destination, ""))
	case *ast.AutoLink:
		// No backslash escapes in an autolink (CommonMark); its
		// character references are resolved as in any URL.
		url := textValue(n.URL(r.src), asciiPunct)
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(url, "mailto:") {
			url = "mailto:" + url
		}
		r.link(b, r.esc(textValue(n.Label(r.src), asciiPunct)), url)
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			s := n.Segments.At(i)
			b.WriteString(r.esc(string(s.Value(r.src))))
		}
	case *east.TaskCheckBox:
		if n.IsChecked {
			b.WriteString("☑ ")
		} else {
			b.WriteString("☐ ")
		}
	default:
		b.WriteString(r.inlines(n))
	}
}

func (r *renderer) link(b *strings.Builder, label, url string) {
	switch {
	case r.st.Link != nil:
		b.WriteString(r.st.Link(label, url))
	case label == "" || label == r.esc(url) || "mailto:"+label == url:
		b.WriteString(r.esc(url))
	default:
		b.WriteString(label + " (" + r.esc(url) + ")")
	}
}

// textValue is the text a (non-code) text segment stands for, as
// CommonMark reads it: backslash escapes (`\*`, `\_`, `\|`) and entity and
// numeric character references (`&amp;`, `&#65;`) resolved. The segment is
// the source as the agent wrote it: a platform would show the backslashes.
// The escapes of the characters in keep stay as written (Slack's mrkdwn has
// no escapes, and a bare `*` there would start bold).
func textValue(seg []byte, keep string) string {
	if bytes.IndexByte(seg, '\\') < 0 && bytes.IndexByte(seg, '&') < 0 {
		return string(seg)
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c == '\\' && i+1 < len(seg) && util.IsPunct(seg[i+1]):
			i++
			if strings.IndexByte(keep, seg[i]) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(seg[i])
		case c == '&':
			ref, n := charRef(seg[i:])
			if n == 0 {
				ref, n = "&", 1
			}
			b.WriteString(ref)
			i += n - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// asciiPunct is every ASCII punctuation character: as textValue's keep,
// backslashes stay as written.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// charRef reads the entity or numeric character reference at the start of
// s ("&amp;", "&#65;", "&#x41;") and returns what it stands for and its
// length; n is 0 when s does not start with one (CommonMark's rules: at
// most 7 decimal or 6 hex digits; code point 0 or invalid is U+FFFD).
func charRef(s []byte) (string, int) {
	end := bytes.IndexByte(s, ';')
	if end < 2 || end > 40 {
		return "", 0
	}
	body := string(s[1:end])
	if body[0] != '#' {
		for i := 0; i < len(body); i++ {
			if !util.IsAlphaNumeric(body[i]) {
				return "", 0
			}
		}
		if e, ok := util.LookUpHTML5EntityByName(body); ok {
			return string(e.Characters), end + 1
		}
		return "", 0
	}
	digits, base, max := body[1:], 10, 7
	if digits != "" && (digits[0] == 'x' || digits[0] == 'X') {
		digits, base, max = digits[1:], 16, 6
	}
	if digits == "" || len(digits) > max {
		return "", 0
	}
	v, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return "", 0
	}
	r := rune(v)
	if r == 0 || !utf8.ValidRune(r) {
		r = utf8.RuneError
	}
	return string(r), end + 1
}

func lines(n ast.Node, src []byte) string {
	var b strings.Builder
	ls := n.Lines()
	for i := 0; i < ls.Len(); i++ {
		s := ls.At(i)
		b.Write(s.Value(src))
	}
	return b.String()
}

// Plain renders src as plain text: the markup is dropped, links keep their
// URL in parentheses, code keeps its text. It is what a message falls back
// to when a platform refuses its formatting.
func Plain(src string) string { return Render(src, Style{}) }

// SlackPlain is Plain for Slack: with the markup dropped, &, < and > are
// still escaped, because Slack reads <!channel>, <@U…> and <url|label> in
// any text, mrkdwn or not.
func SlackPlain(src string) string { return Render(src, Style{Escape: htmlEscape}) }

// TelegramHTML renders src in the HTML subset of Telegram's Bot API
// (parse_mode HTML): <b>, <i>, <s>, <code>, <pre>, <a>, <blockquote>, with
// &, < and > escaped everywhere else.
func TelegramHTML(src string) string { return Render(src, telegram) }

var telegram = Style{
	Escape: htmlEscape,
	Bold:   [2]string{"<b>", "</b>"}, Italic: [2]string{"<i>", "</i>"},
	Strike: [2]string{"<s>", "</s>"}, Code: [2]string{"<code>", "</code>"},
	Pre: func(lang, code string) string {
		if lang != "" {
			return `<pre><code class="language-` + html.EscapeString(lang) + `">` + code + "</code></pre>"
		}
		return "<pre>" + code + "</pre>"
	},
	Link: func(label, url string) string {
		if label == "" { // an image without alt text: an empty link would show nothing
			label = htmlEscape(url)
		}
		if !safeURL(url) {
			return label
		}
		return `<a href="` + html.EscapeString(url) + `">` + label + "</a>"
	},
	Heading: func(s string) string { return "<b>" + s + "</b>" },
	Quote:   func(s string) string { return "<blockquote>" + s + "</blockquote>" },
}

// htmlEscape escapes the three characters Telegram's HTML parser requires.
// HTMLText is what an HTML rendering of this package shows: its tags left
// out and its entities as the characters they stand for (Telegram counts a
// message's length so, after parsing its entities).
func HTMLText(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		s = s[i+j+1:]
	}
	return html.UnescapeString(b.String())
}

// htmlEscaper and slackURL are built once: a Replacer builds its tables
// at its first use, and one per call cost more than the rendering.
var (
	htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	slackURL    = strings.NewReplacer("|", "%7C", ">", "%3E", "<", "%3C")
)

func htmlEscape(s string) string { return htmlEscaper.Replace(s) }

// SlackMrkdwn renders src in Slack's mrkdwn: *bold*, _italic_, ~strike~,
// `code`, ```blocks```, <url|label> links, with &, < and > escaped so that
// the agent's text cannot forge a mention or a link.
func SlackMrkdwn(src string) string { return Render(src, slack) }

var slack = Style{
	Escape: htmlEscape,
	Bold:   [2]string{"*", "*"}, Italic: [2]string{"_", "_"},
	Strike: [2]string{"~", "~"}, Code: [2]string{"`", "`"},
	Pre: func(_, code string) string { return "```\n" + code + "\n```" },
	Link: func(label, url string) string {
		if !safeURL(url) {
			return label
		}
		u := slackURL.Replace(url)
		if label == "" || label == htmlEscape(url) {
			return "<" + u + ">"
		}
		return "<" + u + "|" + label + ">"
	},
	Heading: func(s string) string { return "*" + s + "*" },
	Quote:   func(s string) string { return "> " + strings.ReplaceAll(s, "\n", "\n> ") },
	// mrkdwn has no escapes: a bare *, _, ~ or ` the agent escaped would
	// format; with its backslash it shows as written.
	KeepEscaped: "*_~`",
}

// safeURL admits the link schemes a chat client opens.
func safeURL(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "mailto:") || strings.HasPrefix(l, "tg://")
}
