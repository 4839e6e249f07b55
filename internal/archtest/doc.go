// Package archtest holds the test that keeps ARCHITECTURE.md's list of
// package imports equal to what the code imports (go list). It has no code.
package archtest
