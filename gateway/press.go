package gateway

import (
	"context"
	"strings"

	"switchboard/adapters"
)

// pressHandler routes a button press (Host.Press) to the part that minted
// the button, by its Data's prefix.
type pressHandler struct {
	approvals *approvals
	stops     *stopper
}

const noLongerActive = "This button is no longer active."

func (h pressHandler) press(ctx context.Context, p adapters.Press) (string, error) {
	kind, rest, _ := strings.Cut(p.Data, ":")
	switch kind {
	case "appr": // "appr:<id>:allow|session|deny" (approvals.go)
		id, choice, ok := strings.Cut(rest, ":")
		if !ok || id == "" {
			return noLongerActive, nil
		}
		return h.approvals.decide(ctx, id, choice, p.Sender)
	case "stop": // "stop:<turn id>", the Stop button (stopbutton.go)
		return h.stops.press(ctx, p)
	}
	return noLongerActive, nil
}
