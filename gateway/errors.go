package gateway

import "errors"

// ErrBadMidTurn: a mid-turn mode other than queue, steer or interrupt
// (ParseMidTurn).
var ErrBadMidTurn = errors.New("bad mid_turn")
