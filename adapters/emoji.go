package adapters

import "strings"

// emojiNames are Slack's names (the shortcodes people type, ":fire:") of
// the emoji agents most often react with, Telegram's whole reaction set
// among them. Slack takes a reaction by name only; Telegram and Discord
// take the emoji itself.
var emojiNames = map[string]string{
	"👍": "+1", "👎": "-1", "❤": "heart", "🔥": "fire", "🥰": "smiling_face_with_3_hearts", "👏": "clap", "😁": "grin",
	"🤔": "thinking_face", "🤯": "exploding_head", "😱": "scream", "🤬": "face_with_symbols_on_mouth", "😢": "cry", "🎉": "tada",
	"🤩": "star-struck", "🤮": "face_vomiting", "💩": "hankey", "🙏": "pray", "👌": "ok_hand", "🕊": "dove_of_peace",
	"🤡": "clown_face", "🥱": "yawning_face", "🥴": "woozy_face", "😍": "heart_eyes", "🐳": "whale", "❤\u200d🔥": "heart_on_fire",
	"🌚": "new_moon_with_face", "🌭": "hotdog", "💯": "100", "🤣": "rolling_on_the_floor_laughing", "⚡": "zap", "🍌": "banana",
	"🏆": "trophy", "💔": "broken_heart", "🤨": "face_with_raised_eyebrow", "😐": "neutral_face", "🍓": "strawberry",
	"🍾": "champagne", "💋": "kiss", "🖕": "middle_finger", "😈": "smiling_imp", "😴": "sleeping", "😭": "sob", "🤓": "nerd_face",
	"👻": "ghost", "👨\u200d💻": "male-technologist", "👀": "eyes", "🎃": "jack_o_lantern", "🙈": "see_no_evil", "😇": "innocent",
	"😨": "fearful", "🤝": "handshake", "✍": "writing_hand", "🤗": "hugging_face", "🫡": "saluting_face", "🎅": "santa",
	"🎄": "christmas_tree", "☃": "snowman", "💅": "nail_care", "🤪": "zany_face", "🗿": "moyai", "🆒": "cool", "💘": "cupid",
	"🙉": "hear_no_evil", "🦄": "unicorn_face", "😘": "kissing_heart", "💊": "pill", "🙊": "speak_no_evil", "😎": "sunglasses",
	"👾": "space_invader", "🤷\u200d♂": "man-shrugging", "🤷": "shrug", "🤷\u200d♀": "woman-shrugging", "😡": "rage",
	"✅": "white_check_mark", "✔": "heavy_check_mark", "❌": "x", "🚀": "rocket", "👋": "wave", "🙌": "raised_hands",
	"💪": "muscle", "✨": "sparkles", "⭐": "star", "😂": "joy", "😄": "smile", "😃": "smiley", "😀": "grinning",
	"🙂": "slightly_smiling_face", "😊": "blush", "😉": "wink", "😅": "sweat_smile", "😬": "grimacing", "🙃": "upside_down_face",
	"😮": "open_mouth", "😕": "confused", "🥳": "partying_face", "⚠": "warning", "❓": "question", "❗": "exclamation",
	"💡": "bulb", "📝": "memo", "🐛": "bug", "⏳": "hourglass_flowing_sand", "👆": "point_up_2", "🎯": "dart", "📌": "pushpin",
	"🔴": "red_circle", "🟢": "large_green_circle", "🟡": "large_yellow_circle", "☕": "coffee", "🍕": "pizza", "🎂": "birthday",
}

// textDefault are the emoji of emojiNames that are shown as text unless
// the emoji presentation selector (U+FE0F) follows them: "❤" is a text
// heart, "❤\ufe0f" the emoji. Platforms differ in which form they take.
var textDefault = map[string]bool{"❤": true, "✍": true, "☃": true, "✔": true, "⚠": true, "🕊": true}

// EmojiPresentation is emoji in its emoji form: with the presentation
// selector (U+FE0F) when it is text by default (❤ → ❤️), as Discord names
// it; any other emoji, a ZWJ sequence among them, is returned as it is.
func EmojiPresentation(emoji string) string {
	if textDefault[emoji] {
		return emoji + "\ufe0f"
	}
	return emoji
}

// EmojiName is Slack's name for reaction: a name as it is (":thumbsup:"
// and "thumbsup" alike), an emoji as Slack names it (a skin tone as
// "::skin-tone-N"); an emoji whose name is not known here is returned as
// it is, for the platform to refuse.
func EmojiName(reaction string) string {
	s := strings.Trim(strings.TrimSpace(reaction), ":")
	tone := ""
	key := strings.Map(func(r rune) rune {
		switch {
		case r == '\ufe0f': // the emoji presentation selector: ❤️ is ❤
			return -1
		case r >= 0x1f3fb && r <= 0x1f3ff: // skin tones 1-2 to 6
			tone = "::skin-tone-" + string(rune('2'+r-0x1f3fb))
			return -1
		}
		return r
	}, s)
	if name, ok := emojiNames[key]; ok {
		return name + tone
	}
	return s
}

// emojiByName maps emojiNames back, with the aliases people type.
var emojiByName = func() map[string]string {
	m := map[string]string{"thumbsup": "👍", "thumbsdown": "👎", "poop": "💩", "shit": "💩", "check": "✅", "heavy_heart": "❤",
		"red_heart": "❤", "thinking": "🤔", "laughing": "😆", "satisfied": "😆", "ok": "🆗", "rofl": "🤣", "party": "🥳", "hugs": "🤗"}
	for e, name := range emojiNames {
		m[name] = e
	}
	return m
}()

// EmojiByName is the emoji a shortcode names (":fire:", "fire", "+1",
// "thumbsup"), for platforms that take the emoji itself; ok is false for
// a name not known here (a custom emoji's, say).
func EmojiByName(name string) (emoji string, ok bool) {
	emoji, ok = emojiByName[strings.ToLower(strings.Trim(strings.TrimSpace(name), ":"))]
	return emoji, ok
}
