package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rtbd/rtbd/bidder/user/recommended"
)

// usersMain is `rtbd users SUBCOMMAND`: recommend sets users' Recommended
// products from an outside recommender (recommended.Main).
//
// Its usage errors name the command: "rtbd users recommend: ...".
func usersMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "recommend" {
		sub := ""
		if len(args) > 0 {
			sub = args[0]
		}
		if sub == "-h" || sub == "-help" || sub == "--help" {
			usersUsage(stdout)
			return errHelp
		}
		return cmdUsageErr("rtbd users", fmt.Errorf("%w: unknown subcommand %q (want: recommend)", recommended.ErrUsage, sub))
	}
	err := recommended.Main(ctx, args[1:], stdout, stderr)
	if errors.Is(err, recommended.ErrUsage) {
		return cmdUsageErr("rtbd users recommend", err)
	}
	return err
}

// usersUsage documents `rtbd users`.
func usersUsage(w io.Writer) {
	recommended.Usage(w)
}
