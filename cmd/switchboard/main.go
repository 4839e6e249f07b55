// Command switchboard is the Switchboard chat gateway and its operator CLI.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "switchboard: %v\nRun 'switchboard --help' for usage.\n", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "switchboard: %v\n", err)
	os.Exit(1)
}
