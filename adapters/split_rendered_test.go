package adapters_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/discord"
	"switchboard/adapters/slack"
	"switchboard/adapters/telegram"
)

// renderedDocs are Markdown that renders longer than its source: compact
// tables (cells get " | ", headers bold), nested lists, and quotes with
// lazy continuation lines (every line gets its "> " once rendered).
func renderedDocs(units int) map[string]string {
	var table, list, quote, mixed strings.Builder
	table.WriteString("a|b|c\n-|-|-\n")
	quote.WriteString("> ")
	for i := 0; table.Len() < units*3; i++ {
		fmt.Fprintf(&table, "t%d|&%d|<%d>\n", i, i, i)
	}
	for i := 0; list.Len() < units*3; i++ {
		fmt.Fprintf(&list, "1. l%d\n   - m%d\n     - n%d &\n", i, i, i)
	}
	for i := 0; quote.Len() < units*3; i++ {
		fmt.Fprintf(&quote, "q%d\n", i)
	}
	for i := 0; mixed.Len() < units*3; i++ {
		fmt.Fprintf(&mixed, "x%d|y%d\n-|-\nz%d|&\n\n> p%d\nr%d\n\n- s%d\n  - u%d\n\n", i, i, i, i, i, i, i)
	}
	return map[string]string{"table": table.String(), "nested list": list.String(), "quote": quote.String(), "mixed": mixed.String()}
}

var word = regexp.MustCompile(`[a-z][0-9]+`)

// Every part, once rendered, fits the platform's limit (formatted and plain
// fallback alike), and no word is lost or repeated, at every platform's
// limit.
func TestSplitRenderedFitsEveryPlatform(t *testing.T) {
	for _, a := range []adapters.Limiter{&telegram.Adapter{}, &slack.Adapter{}, &discord.Adapter{}} {
		lim := a.Limits()
		measure := lim.Measure
		if measure == nil {
			measure = adapters.UTF16Len
		}
		for name, doc := range renderedDocs(lim.MaxText) {
			t.Run(fmt.Sprintf("%T/%s", a, name), func(t *testing.T) {
				parts := adapters.SplitRendered(doc, lim.MaxText, lim.Measure)
				for i, p := range parts {
					if n := measure(p); n > lim.MaxText {
						t.Errorf("part %d of %d renders to %d units; the limit is %d", i+1, len(parts), n, lim.MaxText)
					}
				}
				if got, want := word.FindAllString(strings.Join(parts, "\n"), -1), word.FindAllString(doc, -1); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("the parts hold %d words, the text %d (lost or repeated)", len(got), len(want))
				}
			})
		}
	}
}

// Without measuring the rendering, the same documents overflow Telegram:
// the case the test above guards.
func TestSplitOfSourceOverflowsTelegram(t *testing.T) {
	lim := (&telegram.Adapter{}).Limits()
	for _, name := range []string{"table", "quote"} {
		over := 0
		for _, p := range adapters.Split(renderedDocs(lim.MaxText)[name], lim.MaxText) {
			if lim.Measure(p) > lim.MaxText {
				over++
			}
		}
		if over == 0 {
			t.Errorf("%s: no source-split part renders over %d; the document no longer exercises the rendering", name, lim.MaxText)
		}
	}
}
