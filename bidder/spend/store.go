package spend

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of the spend package.
var (
	// ErrClosed is returned by Writer.Add after Close has begun.
	ErrClosed = errors.New("spend: closed")
	// ErrInvalid is wrapped by the errors for an Add or a Delta that cannot
	// be recorded (empty campaign id, negative micros, a malformed day).
	ErrInvalid = errors.New("spend: invalid")
	// ErrUnflushed is wrapped by Close when its context ended before every
	// accepted Add reached the store; the message says how much is left.
	ErrUnflushed = errors.New("spend: unflushed spend left at close")
)

// Store is the shared spend store the Writer flushes to: Pebble (embedded,
// one bidder), Redis or Aerospike (a fleet). Implementations must be safe for
// concurrent use: the Writer calls Flush from several flusher goroutines at
// once (at most Options.Flushers) and Read from its refresh loop.
type Store interface {
	// Flush adds every delta to the store and returns, for each delta in the
	// same order, the store's totals after the add: the campaign's spend and
	// impressions for delta.Day and in total, and the user counts of
	// delta.Freq (same order). Those totals include every bidder's flushes,
	// which is how each bidder learns the fleet-wide spend.
	//
	// Charge once: a store applies each notice of Delta.Notices (its key,
	// Nonce and Kind) at most once, fleet-wide, with its counters'
	// increment: in one step where the store has multi-key atomicity (a
	// Redis script, a Pebble batch), or record by record with guards that
	// make a retry add only what is missing (Aerospike). A notice whose key
	// it applied before, from any bidder, adds nothing and counts in
	// Total.Duplicates. So retrying a flush whose outcome is unknown (a
	// timeout after the request was sent), or after some of it failed,
	// never counts a notice twice, and nor does a replay to another bidder
	// or after a restart, while the notice's key lives (Notice.Expires).
	// A delta without notices (not the Writer's) is applied as it is: once
	// per Delta.ID within DedupeWindow by the stores that can (Redis,
	// Pebble), at least once by the others (their package comments say).
	//
	// On error nothing about the outcome is promised; the caller keeps the
	// deltas and retries them unchanged (same IDs, same content).
	Flush(ctx context.Context, deltas []Delta) (totals []Total, err error)

	// Read returns the totals of campaigns for day (YYYY-MM-DD), one per
	// campaign in the same order; a campaign the store has never seen has
	// zero totals. Total.Freq is nil.
	Read(ctx context.Context, campaigns []string, day string) ([]Total, error)
}

// DedupeWindow is how long a store that deduplicates deltas without
// notices remembers a Delta.ID (the Writer's deltas carry notices, keyed
// until each notice's Expires instead).
const DedupeWindow = 24 * time.Hour

// Delta is what one flush adds for one campaign and day.
type Delta struct {
	// ID is unique for every delta ever sent (writer id + sequence); a
	// retried delta keeps its ID. At most 64 bytes of [0-9A-Za-z._:-].
	ID string
	// Campaign is the campaign id (1..MaxIDLen bytes, no control characters).
	Campaign string
	// Day is the date in the campaign's time zone, "YYYY-MM-DD".
	Day string
	// Micros is the spend to add, in micros of the campaign's currency (>= 0);
	// it is added to the day's spend and to the campaign's total spend.
	Micros int64
	// Imps is the number of impressions (won and accepted notices) to add (>= 0).
	Imps int64
	// Freq are per-user impression counts to add for this campaign.
	Freq []FreqDelta
	// Notices are the accepted notices whose charges Micros, Imps and Freq
	// sum. A store applies each notice's key (Nonce, Kind) at most once,
	// fleet-wide, atomically with the counters: a notice whose key it has
	// already applied (a replay to another bidder, a retried flush, the
	// journal's replay after a restart) adds nothing. When Notices is not
	// empty the store adds what its new notices charge (each Micros, one
	// impression, one count in Freq[FreqRef-1]), not the sums, and
	// ValidateDeltas checks that the sums match.
	Notices []Notice
	// Origin is the Options.InstanceID of the Writer that sealed the delta,
	// and Seq the batch sequence it sealed it with: the same for every delta
	// of one campaign in one Flush, larger for every later batch of that
	// campaign from that Origin, across restarts too. Stores that cannot
	// apply a flush atomically (Aerospike) use them to guard their counters.
	Origin string
	Seq    int64
	// Counts, when not nil, are outcome counters (bids, wins, losses by
	// reason; see Counts) to add to the campaign's lifetime counters. Only
	// on a delta without notices, so it is applied like one: once per ID
	// (Redis, Pebble), at least once (Aerospike).
	Counts *Counts
}

// FreqDelta adds Count impressions of one campaign to one user in one
// frequency-cap window.
type FreqDelta struct {
	// User is the user id (1..MaxIDLen bytes).
	User string
	// Window is the start of the cap window, in unix seconds: windows are
	// fixed, aligned to the unix epoch, one cap period long.
	Window int64
	// Count is the number of impressions to add (> 0).
	Count int64
	// Expires is when the store may forget the count (the window's end plus
	// a grace period); whole seconds.
	Expires time.Time
}

// Total is the store's state for one campaign after a Flush or as Read.
type Total struct {
	Campaign string
	Day      string
	// DayMicros and DayImps are the spend (micros) and impressions of Day.
	DayMicros, DayImps int64
	// TotalMicros and TotalImps are the campaign's lifetime spend and impressions.
	TotalMicros, TotalImps int64
	// Freq are the users' counts after the add, in the order of Delta.Freq.
	Freq []int64
	// Duplicates is how many of the delta's Notices the store had already
	// applied (and so did not add again).
	Duplicates int64
	// Counts are the campaign's lifetime outcome counters after the add
	// (a delta with Counts) or as read (Read); zero after a delta without
	// Counts.
	Counts Counts
}

// MaxIDLen is the longest campaign or user id the spend package accepts, in bytes.
const MaxIDLen = 256

// ValidID reports whether s is a usable campaign or user id: 1..MaxIDLen
// bytes without control characters or '|' (stores use it as a separator).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '|' {
			return false
		}
	}
	return true
}

// ValidDay reports whether s is a "YYYY-MM-DD" date.
func ValidDay(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// ValidateDeltas checks deltas as every Store must before applying any of
// them, so that a bad delta changes nothing. The error wraps ErrInvalid and
// names the delta.
func ValidateDeltas(deltas []Delta) error {
	for i := range deltas {
		d := &deltas[i]
		switch {
		case d.ID == "" || len(d.ID) > 64 || !validDeltaID(d.ID):
			return fmt.Errorf("%w: delta %d: bad id %q", ErrInvalid, i, d.ID)
		case !ValidID(d.Campaign):
			return fmt.Errorf("%w: delta %d: bad campaign id %q", ErrInvalid, i, d.Campaign)
		case !ValidDay(d.Day):
			return fmt.Errorf("%w: delta %d: bad day %q", ErrInvalid, i, d.Day)
		case d.Micros < 0 || d.Imps < 0:
			return fmt.Errorf("%w: delta %d: negative micros or imps", ErrInvalid, i)
		}
		for j := range d.Freq {
			f := &d.Freq[j]
			if !ValidID(f.User) || f.Count <= 0 || f.Window < 0 || f.Expires.IsZero() {
				return fmt.Errorf("%w: delta %d: freq %d: bad user, count, window or expiry", ErrInvalid, i, j)
			}
		}
		if err := validateCounts(d); err != nil {
			return fmt.Errorf("%w: delta %d: %v", ErrInvalid, i, err)
		}
		if err := validateNotices(d); err != nil {
			return fmt.Errorf("%w: delta %d: %v", ErrInvalid, i, err)
		}
	}
	return nil
}

// validateNotices checks that d's notices are well formed and that d's
// Micros, Imps and Freq counts are their sums.
func validateNotices(d *Delta) error {
	if len(d.Notices) == 0 {
		return nil
	}
	if !ValidID(d.Origin) || d.Seq <= 0 {
		return fmt.Errorf("a delta with notices needs an origin and a positive seq, got %q, %d", d.Origin, d.Seq)
	}
	var micros int64
	counts := make([]int64, len(d.Freq))
	for k := range d.Notices {
		n := &d.Notices[k]
		switch {
		case n.Nonce == (Nonce{}) || n.Kind == 0:
			return fmt.Errorf("notice %d: zero nonce or kind", k)
		case n.Micros < 0:
			return fmt.Errorf("notice %d: negative micros", k)
		case n.Expires.IsZero():
			return fmt.Errorf("notice %d: no expiry", k)
		case n.FreqRef < 0 || n.FreqRef > len(d.Freq):
			return fmt.Errorf("notice %d: freq ref %d of %d", k, n.FreqRef, len(d.Freq))
		}
		micros += n.Micros
		if n.FreqRef > 0 {
			counts[n.FreqRef-1]++
		}
	}
	if micros != d.Micros || int64(len(d.Notices)) != d.Imps {
		return fmt.Errorf("micros %d, imps %d are not the notices' sums %d, %d", d.Micros, d.Imps, micros, len(d.Notices))
	}
	for j := range d.Freq {
		if counts[j] != d.Freq[j].Count {
			return fmt.Errorf("freq %d: count %d, notices %d", j, d.Freq[j].Count, counts[j])
		}
	}
	return nil
}

// NoticeKey is the key a store keeps for a notice: the 16 nonce bytes and
// the kind, as 34 lower-case hex digits.
func NoticeKey(n *Notice) string {
	var b [34]byte
	hex.Encode(b[:32], n.Nonce[:])
	hex.Encode(b[32:], []byte{byte(n.Kind)})
	return string(b[:])
}

// ValidateRead checks the arguments of Store.Read as every Store must
// before reading: day a "YYYY-MM-DD" date, every campaign id valid. The
// error wraps ErrInvalid and names the bad argument.
func ValidateRead(campaigns []string, day string) error {
	if !ValidDay(day) {
		return fmt.Errorf("%w: read: bad day %q", ErrInvalid, day)
	}
	for _, c := range campaigns {
		if !ValidID(c) {
			return fmt.Errorf("%w: read: bad campaign id %q", ErrInvalid, c)
		}
	}
	return nil
}

func validDeltaID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
