package recommended

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/rtbd/rtbd/bidder/user"
)

// MaxLineBytes is the longest line accepted; a longer one is rejected.
const MaxLineBytes = 1 << 20

// ErrBadLine is wrapped by every error of ParseLine.
var ErrBadLine = errors.New("recommended: bad line")

type lineJSON struct {
	UID         *string      `json:"uid"`
	Recommended *[]groupJSON `json:"recommended"`
}

type groupJSON struct {
	Group *int64  `json:"group"`
	IDs   []int64 `json:"ids"`
}

// Line is one parsed line: a user and their new Recommended products.
type Line struct {
	UID         string
	Recommended []user.GroupIDs
}

// ParseLine parses one line of the input (without its newline) into l,
// reusing l's slices, and checks it with user.CheckRecommended and lim.
// Errors wrap ErrBadLine (and user.ErrInvalidUID or user.ErrInvalidProfile
// for a uid or list the stores would refuse) and say what is wrong.
func ParseLine(b []byte, lim user.Limits, l *Line) error {
	var j lineJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLine, jsonErr(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: more than one JSON value on the line", ErrBadLine)
	}
	if j.UID == nil {
		return fmt.Errorf("%w: no \"uid\"", ErrBadLine)
	}
	if j.Recommended == nil {
		return fmt.Errorf("%w: no \"recommended\" (give [] to remove a user's recommendations)", ErrBadLine)
	}
	l.UID = *j.UID
	l.Recommended = l.Recommended[:0]
	for i, g := range *j.Recommended {
		if g.Group == nil {
			return fmt.Errorf("%w: recommended[%d]: no \"group\"", ErrBadLine, i)
		}
		l.Recommended = append(l.Recommended, user.GroupIDs{Group: *g.Group, IDs: g.IDs})
	}
	if err := user.CheckRecommended(l.UID, l.Recommended, lim); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLine, err)
	}
	return nil
}

// jsonErr makes the JSON decoder's errors read as a line's problem.
func jsonErr(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("not a JSON object (an empty line)")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("not a JSON object (it ends before it closes)")
	case errors.As(err, &se):
		return fmt.Errorf("not valid JSON at byte %d: %w", se.Offset, err)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Errorf("%q: want %s, got JSON %s", te.Field, want(te), te.Value)
		}
		return fmt.Errorf("want a JSON object, got JSON %s", te.Value)
	}
	return err
}

func want(te *json.UnmarshalTypeError) string {
	switch te.Type.Kind().String() {
	case "int64":
		return "an integer (int64)"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct":
		return "an object"
	}
	return te.Type.String()
}
