package slack

import "strings"

// emojiNames are Slack's names of the emoji agents most often react with
// (Telegram's whole reaction set among them): reactions.add takes a name,
// never the emoji itself, and the other platforms take the emoji.
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

// emojiName is the name reactions.add takes for reaction: a Slack name as
// it is (":thumbsup:" and "thumbsup" alike), an emoji as Slack names it
// (a skin tone as "::skin-tone-N"); an emoji Slack's name of which is not
// known here is passed on for Slack to refuse with invalid_name.
func emojiName(reaction string) string {
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
