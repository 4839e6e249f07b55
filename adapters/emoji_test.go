package adapters

import "testing"

// TestEmojiPresentation: an emoji shown as text by default gets the
// presentation selector, whether named by shortcode or given as it is;
// others, ZWJ sequences among them, stay as they are; and every such emoji
// is one of the table's (a platform that takes the emoji reaches it by
// shortcode).
func TestEmojiPresentation(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"❤", "❤\ufe0f"}, {"⚠", "⚠\ufe0f"}, {"🕊", "🕊\ufe0f"}, {"🔥", "🔥"}, {"✅", "✅"}, {"❤\u200d🔥", "❤\u200d🔥"},
	} {
		if got := EmojiPresentation(c.in); got != c.want {
			t.Errorf("EmojiPresentation(%q) = %q; want %q", c.in, got, c.want)
		}
	}
	if e, _ := EmojiByName(":heart:"); EmojiPresentation(e) != "❤\ufe0f" {
		t.Errorf(":heart: presented as %q; want ❤ with the selector", EmojiPresentation(e))
	}
	for e := range textDefault {
		if _, ok := emojiNames[e]; !ok {
			t.Errorf("%q needs the selector but has no shortcode in emojiNames", e)
		}
	}
}
