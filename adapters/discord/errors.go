package discord

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
)

// classify maps what discordgo returned for a request about chat to the
// adapters' error kinds: Discord's codes for missing access, an unknown
// channel or an unknown message are permanent and say how to fix it, a 429
// is a RetryAfterError, other 4xx answers are permanent, the rest is
// transient. (discordgo waits out most rate limits itself.)
func classify(chat adapters.JID, err error) error {
	if err == nil {
		return nil
	}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) {
		if rest.Message != nil {
			switch rest.Message.Code {
			case discordgo.ErrCodeMissingAccess, discordgo.ErrCodeMissingPermissions:
				return fmt.Errorf("discord: the bot may not post in %s (%s); invite it to the channel and give it Send Messages: %w", chat, rest.Message.Message, adapters.ErrPermanent)
			case discordgo.ErrCodeUnknownChannel:
				return fmt.Errorf("discord: channel %s does not exist (deleted, or the bot left the server): %w", chat, adapters.ErrPermanent)
			case discordgo.ErrCodeUnknownMessage:
				return fmt.Errorf("discord: message not found in %s: %w", chat, adapters.ErrPermanent)
			}
		}
		if rest.Response != nil {
			switch code := rest.Response.StatusCode; {
			case code == http.StatusTooManyRequests:
				return &adapters.RetryAfterError{Wait: time.Second}
			case code >= 400 && code < 500:
				return fmt.Errorf("discord: %v: %w", err, adapters.ErrPermanent)
			}
		}
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.RateLimit != nil {
		wait, _ := adapters.RetryWait(rl.RetryAfter) // as the adapter's hold (capWait)
		return &adapters.RetryAfterError{Wait: wait}
	}
	return fmt.Errorf("discord: %w", err)
}
