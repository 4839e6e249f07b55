// Package archtest holds the tests that keep the code to the house rules it
// can check from source: ARCHITECTURE.md's list of package imports equal to
// what the code imports (go list), and log calls with prose messages and no
// attribute key that slog writes itself. It has no code.
package archtest
