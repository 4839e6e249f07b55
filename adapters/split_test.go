package adapters

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		max  int
		want []string
	}{
		{"fits", "hello", 10, []string{"hello"}},
		{"no limit", strings.Repeat("x", 100), 0, []string{strings.Repeat("x", 100)}},
		{"paragraphs first", "aaaa bbbb\ncccc\n\ndddd eeee", 16, []string{"aaaa bbbb\ncccc", "dddd eeee"}},
		{"then lines", "aaaa bbbb\ncccc dddd", 12, []string{"aaaa bbbb", "cccc dddd"}},
		{"then words", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"then characters", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"emoji count twice", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"never splits a surrogate pair", "a😀b", 2, []string{"a", "😀", "b"}},
		{
			"code block closed and reopened",
			"intro\n\n```go\nline one\nline two\nline three\n```\nafter",
			30,
			[]string{"intro\n\n```go\nline one\n```", "```go\nline two\nline three\n```", "after"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(tc.text, tc.max)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("Split(%q, %d) =\n%q\nwant\n%q", tc.text, tc.max, got, tc.want)
			}
		})
	}
}

func TestSplitProperties(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		b.WriteString(strings.Repeat("lorem ipsum dolor ", i%7+1))
		if i%5 == 0 {
			b.WriteString("\n```python\nprint('x')\n" + strings.Repeat("y = 1\n", i) + "```\n")
		}
		b.WriteString("\n\n")
	}
	text := b.String()
	for _, max := range []int{40, 64, 100, 333, 4096} {
		parts := Split(text, max)
		var words []string
		for i, p := range parts {
			if n := UTF16Len(p); n > max {
				t.Errorf("max %d: part %d is %d units", max, i, n)
			}
			if _, open := openFence(p); open {
				t.Errorf("max %d: part %d leaves a code block open:\n%s", max, i, p)
			}
			words = append(words, strings.Fields(p)...)
		}
		// Every word of the text survives, in order; only fence markers are added.
		var kept []string
		for _, w := range words {
			if !strings.HasPrefix(w, "```") {
				kept = append(kept, w)
			}
		}
		var orig []string
		for _, w := range strings.Fields(text) {
			if !strings.HasPrefix(w, "```") {
				orig = append(orig, w)
			}
		}
		if strings.Join(kept, " ") != strings.Join(orig, " ") {
			t.Errorf("max %d: words changed", max)
		}
	}
}

// A code fence whose info string is as long as a part (or longer) is cut
// into parts of the usual size that each fit, not into one part per
// character each over the limit.
func TestSplitLongFenceInfo(t *testing.T) {
	var code strings.Builder
	for i := range 400 {
		code.WriteString("let x" + strings.Repeat("y", i%7) + " = compute();\n")
	}
	for _, max := range []int{2000, 4000, 4096} {
		for _, info := range []string{
			"python " + strings.Repeat("t", max),  // language, then a huge attribute
			strings.Repeat("z", 2*max),            // one huge word
			"js " + strings.Repeat("k=v ", max/4), // many attributes, about one part long
		} {
			text := "intro\n\n```" + info + "\n" + code.String() + "```\nafter"
			parts := Split(text, max)
			if limit := 3*UTF16Len(text)/max + 3; len(parts) > limit {
				t.Errorf("max %d, info of %d: %d parts; want at most %d", max, len(info), len(parts), limit)
			}
			for i, p := range parts {
				if n := UTF16Len(p); n > max {
					t.Errorf("max %d, info of %d: part %d is %d units long", max, len(info), i, n)
					break
				}
			}
			if joined := strings.Join(parts, "\n"); !strings.Contains(joined, "let xyyyyyy = compute();") || !strings.HasSuffix(joined, "after") {
				t.Errorf("max %d, info of %d: code lost", max, len(info))
			}
		}
	}
}
