//go:build !linux

package agent

// KillLeftovers is Linux-only (it reads /proc).
func KillLeftovers(string) ([]Reaped, error) { return nil, nil }

// killTurnLeftovers is Linux-only (it reads /proc).
func killTurnLeftovers(string) (int, error) { return 0, nil }
