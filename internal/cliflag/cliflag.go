// Package cliflag parses the flags of rtbd's subcommands (ingest, gen,
// bench) one way: -h and -help come back as flag.ErrHelp (the command
// exits 0 after the usage text), any other bad flag as the command's
// usage error (exit 2).
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args into fs, which prints its complaints and usage to
// stderr. A failure is flag.ErrHelp itself, or an error wrapping both
// usage (the package's sentinel, such as ingest.ErrUsage) and the flag
// package's message.
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer, usage error) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", usage, err)
	}
	return nil
}

// ParseNoArgs is Parse for a command of flags only: an argument left after
// them is a usage error that names it.
func ParseNoArgs(fs *flag.FlagSet, args []string, stderr io.Writer, usage error) error {
	if err := Parse(fs, args, stderr, usage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s: unexpected argument %q", usage, fs.Name(), fs.Arg(0))
	}
	return nil
}
