//go:build !linux

package gateway

import "log/slog"

// killLeftovers is Linux-only (it reads /proc).
func killLeftovers(string, *slog.Logger) int { return 0 }

// killTurnLeftovers is Linux-only (it reads /proc).
func killTurnLeftovers(string) (int, error) { return 0, nil }
