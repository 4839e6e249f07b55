package telegram

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-telegram/bot"

	"switchboard/adapters"
)

// classify maps what the SDK returned for a request about chat jid to the
// adapters' error kinds: a 429 is a RetryAfterError of Telegram's
// retry_after (capped: adapters.RetryWait), a chat the bot was blocked from, removed from or never in
// is permanent with how to fix it, refused formatting is ErrFormat (Send
// resends plain text), other 400s and 403s are permanent, the rest is
// transient.
func classify(jid adapters.JID, err error) error {
	if err == nil {
		return nil
	}
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) {
		wait, _ := adapters.RetryWait(time.Duration(tooMany.RetryAfter) * time.Second)
		return &adapters.RetryAfterError{Wait: wait}
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "bot was blocked by the user"):
		return fmt.Errorf("telegram: %s blocked the bot; they must unblock it to get replies: %w", jid, adapters.ErrPermanent)
	case strings.Contains(msg, "bot was kicked"), strings.Contains(msg, "not a member"):
		return fmt.Errorf("telegram: the bot was removed from %s; add it to the group again: %w", jid, adapters.ErrPermanent)
	case strings.Contains(msg, "chat not found"):
		return fmt.Errorf("telegram: chat %s not found (the bot was never added, or the chat is gone): %w", jid, adapters.ErrPermanent)
	case isParseError(err):
		return fmt.Errorf("telegram: %v: %w", err, adapters.ErrFormat)
	case errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorBadRequest):
		return fmt.Errorf("telegram: %v: %w", err, adapters.ErrPermanent)
	}
	return fmt.Errorf("telegram: %w", err)
}

func isParseError(err error) bool {
	return err != nil && strings.Contains(err.Error(), "can't parse entities")
}
