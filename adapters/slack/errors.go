package slack

import (
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"switchboard/adapters"
)

// classify maps a Web API error of verb on chat to the adapters' error
// kinds: a rate limit is a RetryAfterError of Slack's Retry-After (capped:
// adapters.RetryWait); a chat the bot is not in, that is gone or archived,
// and the errors no retry mends are permanent and say how to fix it; the
// rest is transient.
func classify(verb string, chat adapters.JID, err error) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		wait, _ := adapters.RetryWait(rl.RetryAfter) // as the tiers' hold (holding)
		return &adapters.RetryAfterError{Wait: wait}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "not_in_channel":
			return fmt.Errorf("%w: slack %s %s: the bot is not in this channel: invite it with /invite @<bot name>", adapters.ErrPermanent, verb, chat)
		case "channel_not_found":
			return fmt.Errorf("%w: slack %s %s: channel not found: it was deleted, or it is private and the bot was never invited (/invite @<bot name>)", adapters.ErrPermanent, verb, chat)
		case "is_archived":
			return fmt.Errorf("%w: slack %s %s: the channel is archived: unarchive it to talk here", adapters.ErrPermanent, verb, chat)
		case "message_not_found", "cant_update_message", "cant_delete_message", "edit_window_closed",
			"msg_too_long", "no_text", "invalid_name", "too_many_reactions", "too_many_pins", "restricted_action", "missing_scope":
			return fmt.Errorf("%w: slack %s %s: %s", adapters.ErrPermanent, verb, chat, describe(se))
		}
	}
	return fmt.Errorf("slack %s %s: %w", verb, chat, err)
}

func describe(se slack.SlackErrorResponse) string {
	switch se.Err {
	case "invalid_name":
		return "Slack knows no emoji by that name: use a Slack emoji name such as thumbsup or white_check_mark"
	case "missing_scope":
		return "the app lacks the scope " + se.Needed + ": add it in the app's manifest and reinstall"
	}
	return se.Err
}

// isFormatError: Slack refused the message's markup.
func isFormatError(err error) bool {
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		return false
	}
	switch se.Err {
	case "invalid_blocks", "invalid_blocks_format", "invalid_attachments", "markdown_text_conflict":
		return true
	}
	return false
}

func isCode(err error, code string) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && se.Err == code
}
