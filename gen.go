package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/rtbd/rtbd/gen/demo"
	"github.com/rtbd/rtbd/ingest"
)

// genMain is `rtbd gen`: -demo writes a demo environment (demo.DemoMain),
// -users N without -demo writes demo user profiles into a bidder data
// directory (demo.UsersMain), anything else is a plain synthetic feed
// (ingest.GenMain).
//
// Its usage errors name the command: "rtbd gen: ...".
func genMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var err error
	switch genForm(args) {
	case genDemo:
		err = demo.DemoMain(ctx, args, stdout, stderr)
	case genUsers:
		err = demo.UsersMain(ctx, args, stdout, stderr)
	default:
		err = ingest.GenMain(ctx, args, stdout, stderr)
	}
	if errors.Is(err, ingest.ErrUsage) || errors.Is(err, demo.ErrUsage) {
		return cmdUsageErr("rtbd gen", err)
	}
	return err
}

// genUsage documents `rtbd gen`: the demo forms, then the plain feed.
func genUsage(w io.Writer) {
	demo.Usage(w)
	ingest.GenUsage(w)
}

// The forms of `rtbd gen`.
const (
	genFeed = iota
	genDemo
	genUsers
)

// genForm tells which form of `rtbd gen` args are: -demo (with or without
// -users), -users alone, or neither (a plain feed).
func genForm(args []string) int {
	var d, users bool
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "demo":
			d = true
		case "users":
			users = true
		}
	}
	switch {
	case d:
		return genDemo
	case users:
		return genUsers
	}
	return genFeed
}
