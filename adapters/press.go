package adapters

import (
	"context"
	"errors"
	"fmt"
)

// PressFailedAnswer is what a presser is shown when the gateway could not
// take the press (the store was busy): the press may be tried again.
const PressFailedAnswer = "That did not go through; please try again."

// PressAnswer hands p to host and returns the text to show the presser
// privately: Host.Press's answer; "" for a press without data or one the
// gateway refused as garbage (ErrBadMessage: acknowledged, nothing
// changes); the answer of a press naming no request (ErrUnknownRequest);
// PressFailedAnswer, with the error for the adapter's log, when
// the gateway failed. Every adapter acknowledges the platform with it, so
// the presser is answered whatever happened.
func PressAnswer(ctx context.Context, host Host, p Press) (string, error) {
	if p.Data == "" {
		return "", nil
	}
	answer, err := host.Press(ctx, p)
	switch {
	case errors.Is(err, ErrBadMessage):
		return "", nil
	case errors.Is(err, ErrUnknownRequest):
		return answer, nil
	case err != nil:
		return PressFailedAnswer, fmt.Errorf("press %q in %s: %w", p.Data, p.Chat, err)
	}
	return answer, nil
}
