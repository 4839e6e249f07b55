package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"switchboard/store"
)

func (a *app) backupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the database to FILE (safe while the gateway runs)",
		Long: `Write a consistent online copy of the database to FILE with SQLite's VACUUM INTO
(safe while the gateway runs and writes), then verify it: it opens, passes the
integrity check and has the database's schema version. FILE must not exist; it is
created with mode 0600. The database is never changed. Restore: stop the gateway,
copy FILE over <data_dir>/switchboard.db, remove switchboard.db-wal and -shm, start
it again (docs/deploy.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return usagef("FILE is empty: give the path of the copy to write, e.g. switchboard-backup.db")
			}
			return a.withStore(cmd.Context(), func(st *store.Store) error {
				if err := st.Backup(cmd.Context(), args[0]); err != nil {
					return err
				}
				abs, _ := filepath.Abs(args[0])
				fi, _ := os.Stat(abs)
				return a.emit(map[string]any{"file": abs, "bytes": fi.Size()}, func(w io.Writer) {
					fmt.Fprintf(w, "backup written and verified: %s (%d bytes)\n", abs, fi.Size())
				})
			})
		},
	}
}
