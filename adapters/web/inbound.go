package web

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"switchboard/adapters"
)

// inbound validates a posted message and builds the Inbound for room.
// A display name that reads as the bot's (botName or "switchboard", in any
// case, spacing or punctuation) is refused like the bot's sender.
func inbound(room string, req postRequest, botName string, now time.Time) (adapters.Inbound, error) {
	name, err := checkSender(req.Sender, req.Name, botName)
	if err != nil {
		return adapters.Inbound{}, err
	}
	id := adapters.MessageID("w-" + timedID(now))
	if req.ID != "" {
		if err := checkWord("id", req.ID); err != nil {
			return adapters.Inbound{}, err
		}
		id = adapters.MessageID("w-" + req.ID)
	}
	if strings.TrimSpace(req.Text) == "" {
		return adapters.Inbound{}, errors.New("text is required and must not be blank")
	}
	if len(req.Text) > maxText {
		return adapters.Inbound{}, fmt.Errorf("text is longer than %d bytes", maxText)
	}
	// A blank topic is no topic: a thread named by spaces would be a
	// thread of its own that nobody can tell from the room.
	if strings.TrimSpace(req.Topic) == "" {
		req.Topic = ""
	}
	if len(req.Topic) > maxTopic || hasControl(req.Topic) {
		return adapters.Inbound{}, fmt.Errorf("topic must be at most %d bytes, without control characters", maxTopic)
	}
	if strings.ContainsFunc(req.Topic, bidiControl) {
		return adapters.Inbound{}, errors.New(bidiRefusal("topic"))
	}
	return adapters.Inbound{
		Chat:       chatJID(room),
		ChatName:   room,
		ID:         id,
		Sender:     senderJID(req.Sender),
		SenderName: name,
		Text:       req.Text,
		Time:       now.UTC(),
		Topic:      req.Topic,
		Verb:       adapters.VerbMention,
	}, nil
}

// checkSender validates a sender id and the display name that goes with
// it (trimmed; the sender id when empty), and returns the name: the id is
// a word and not the bot's, and the name passes checkName, so that a
// sender id shown as the name ("switch-board") cannot read as the bot's.
// A posted message and a button press are checked alike.
func checkSender(sender, name, botName string) (string, error) {
	if err := checkWord("sender", sender); err != nil {
		return "", err
	}
	if strings.EqualFold(sender, botSender) {
		return "", fmt.Errorf("sender %q is reserved for the bot; pick another name", sender)
	}
	if name = strings.TrimSpace(name); name == "" {
		name = sender
	}
	if err := checkName(name, botName); err != nil {
		return "", err
	}
	return name, nil
}

// checkName validates a display name (trimmed): at most maxName
// characters, without control or bidirectional formatting characters,
// and not one that reads as the bot's.
func checkName(name, botName string) error {
	if utf8.RuneCountInString(name) > maxName || hasControl(name) {
		return fmt.Errorf("name must be at most %d characters, without control characters", maxName)
	}
	if strings.ContainsFunc(name, bidiControl) {
		return errors.New(bidiRefusal("name"))
	}
	if looksLike(name, botSender) || looksLike(name, botName) {
		return fmt.Errorf("name %q is reserved for the bot; pick another name", name)
	}
	return nil
}

// checkRoom validates a room name: it becomes the chat JID web:<room>.
func checkRoom(room string) error {
	if err := checkWord("room", room); err != nil {
		return err
	}
	if strings.Trim(room, ".") == "" {
		return errors.New(`room must not be only dots`)
	}
	return nil
}

// checkWord validates a name made of 1-64 ASCII letters, digits, '_', '.' or '-'.
func checkWord(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s is required: 1-%d characters of A-Z a-z 0-9 _ . -", field, maxWord)
	}
	if len(s) > maxWord {
		return fmt.Errorf("%s is longer than %d characters", field, maxWord)
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("%s %q has a character that is not allowed: use A-Z a-z 0-9 _ . -", field, s)
		}
	}
	return nil
}

// looksLike reports whether name reads as want: the same letters and
// digits, ignoring case, spaces, punctuation and invisible characters.
func looksLike(name, want string) bool {
	key := func(s string) string {
		return strings.ToLower(strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r
			}
			return -1
		}, s))
	}
	k := key(want)
	return k != "" && key(name) == k
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}

// bidiControl reports whether r is a bidirectional formatting character
// (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069). They make a name
// display other than it reads: "\u202e" (right-to-left override) and
// "draobhctiws" shows "switchboard", past looksLike. Names in right-to-left
// scripts need none of them.
func bidiControl(r rune) bool {
	switch {
	case r == '\u061c', r == '\u200e', r == '\u200f':
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

func bidiRefusal(field string) string {
	return field + " must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C): they make it display other than it reads"
}
