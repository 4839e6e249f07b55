//go:build race

package ipc_test

const raceEnabled = true
