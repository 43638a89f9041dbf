package user

import (
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"
)

// EventView is the only event ParseEvent accepts: a product page view.
const EventView = "view"

// ErrInvalidEvent is wrapped by every ParseEvent error: the tracking pixel's
// query is not valid (answer 400).
var ErrInvalidEvent = errors.New("user: invalid event")

// EventError says which query parameter of an event is wrong. It wraps
// ErrInvalidEvent, and ErrInvalidUID too when the uid is the problem.
type EventError struct {
	Param  string // "uid", "pg", "pid" or "ev"
	Reason string
	uid    bool
}

func (e *EventError) Error() string {
	return fmt.Sprintf("user: invalid event: %s: %s", e.Param, e.Reason)
}

// Unwrap returns ErrInvalidEvent, and ErrInvalidUID for a bad uid.
func (e *EventError) Unwrap() []error {
	if e.uid {
		return []error{ErrInvalidEvent, ErrInvalidUID}
	}
	return []error{ErrInvalidEvent}
}

// ParseEvent validates the query of GET /event?uid=..&pg=..&pid=..&ev=view:
// uid, pg (product group id), pid (product id) and ev must each appear
// exactly once; uid must pass CheckUID; pg and pid are decimal integers in
// 1..2^63-1 written without sign, spaces or leading zeros; ev must be
// EventView. Other parameters (a cache buster) are ignored. Any problem is
// an *EventError wrapping ErrInvalidEvent. The returned uid is a copy (args
// may be reused after); ev is the EventView constant. It allocates only the
// uid string.
func ParseEvent(args *fasthttp.Args) (uid string, group, pid int64, ev string, err error) {
	if !args.Has("uid") {
		return "", 0, 0, "", &EventError{Param: "uid", Reason: "missing", uid: true}
	}
	q, group, pid, err := ParseEventQuery(args)
	if err != nil {
		return "", 0, 0, "", err
	}
	if q == nil {
		return "", 0, 0, "", &EventError{Param: "uid", Reason: "missing", uid: true}
	}
	if err := CheckUID(q); err != nil {
		return "", 0, 0, "", &EventError{Param: "uid", Reason: reasonOf(err), uid: true}
	}
	return string(q), group, pid, EventView, nil
}

// ParseEventQuery is ParseEvent with uid optional and left unchecked (the
// bidder takes the uid from its cookie, or from a signed uid=): uid is nil
// when absent, else it aliases args (given more than once is an error);
// pg, pid and ev are checked as ParseEvent does. It allocates nothing on
// success.
func ParseEventQuery(args *fasthttp.Args) (uid []byte, group, pid int64, err error) {
	names := [...]string{"uid", "pg", "pid", "ev"}
	var seen [len(names)]int
	var vals [len(names)][]byte
	for k, v := range args.All() {
		for i, name := range names {
			if string(k) == name {
				seen[i]++
				vals[i] = v
			}
		}
	}
	uidB, pgB, pidB, evB := vals[0], vals[1], vals[2], vals[3]
	for i, name := range names {
		switch seen[i] {
		case 0:
			if i == 0 {
				continue // uid is optional here
			}
			return nil, 0, 0, &EventError{Param: name, Reason: "missing"}
		case 1:
		default:
			return nil, 0, 0, &EventError{Param: name, Reason: "given more than once", uid: i == 0}
		}
	}
	if seen[0] == 1 && uidB == nil {
		uidB = []byte{} // present but empty: not absent
	}
	if group, err = parseID(pgB); err != nil {
		return nil, 0, 0, &EventError{Param: "pg", Reason: err.Error()}
	}
	if pid, err = parseID(pidB); err != nil {
		return nil, 0, 0, &EventError{Param: "pid", Reason: err.Error()}
	}
	if string(evB) != EventView {
		if len(evB) > 32 {
			evB = evB[:32]
		}
		return nil, 0, 0, &EventError{Param: "ev", Reason: fmt.Sprintf("%q is not a known event (want %q)", evB, EventView)}
	}
	return uidB, group, pid, nil
}

// reasonOf strips the sentinel prefix from a CheckUID error.
func reasonOf(err error) string {
	s := err.Error()
	if p := ErrInvalidUID.Error() + ": "; len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

var (
	errNotNumber = errors.New("not a decimal integer")
	errNotPos    = errors.New("must be >= 1")
	errTooBig    = errors.New("larger than 2^63-1")
	errLeadZero  = errors.New("leading zero")
)

// parseID parses a positive decimal int64 strictly.
func parseID(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errNotNumber
	}
	if b[0] == '0' {
		if len(b) == 1 {
			return 0, errNotPos
		}
		return 0, errLeadZero
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errNotNumber
		}
		if n > (1<<63-1)/10 {
			return 0, errTooBig
		}
		n = n*10 + uint64(c-'0')
		if n > 1<<63-1 {
			return 0, errTooBig
		}
	}
	return int64(n), nil
}
