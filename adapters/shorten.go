package adapters

import "unicode/utf8"

// Shorten is s cut to at most n characters (runes), its last one "…" when
// it was cut: a button's label, a presser's answer, a section of a
// platform's message that has a length limit of its own.
func Shorten(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
