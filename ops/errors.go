package ops

import "errors"

var (
	// ErrNoOwner: no route owns the chat, so there is no folder to address.
	ErrNoOwner = errors.New("no route owns this chat")
	// ErrNoGroup: a group an operation names (a new group's parent, a
	// route's target, a budget's folder) is not stored. Its text completes
	// the message: "parent group acme does not exist".
	ErrNoGroup = errors.New("does not exist")
	// ErrNotChild: a group other than the operator may create only direct
	// children of itself.
	ErrNotChild = errors.New("not a direct child")
	// ErrBadBudget: a budget whose caps make no sense (CheckBudget).
	ErrBadBudget = errors.New("bad budget")
	// ErrBadMidTurn: a mid-turn mode other than queue, steer or interrupt
	// (CheckMidTurn).
	ErrBadMidTurn = errors.New("bad mid_turn")
	// ErrNotYours: the group acting may not change that group (a setting
	// outside its own subtree, or its tier lacks the authority).
	ErrNotYours = errors.New("not in your subtree")
)
